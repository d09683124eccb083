import Foundation
import RaveDynamic
import RaveMessages
import RaveProtobuf
import RaveRPC

/// Converts the front door's bodies between protobuf's JSON mapping and the encoded messages the pipeline carries,
/// for any method (RaveDynamic's descriptors), and a batch's calls inside it.
///
/// Parsing JSON goes through Foundation: the front door runs it off the event loops.
struct FrontDoorTranscoder: Sendable {
    let transcoder: JSONTranscoder

    init(registry: DescriptorRegistry = .shared) {
        transcoder = JSONTranscoder(registry: registry)
    }

    private var registry: DescriptorRegistry { transcoder.registry }

    /// The encoded request of `call`, and for a batch the method of each of its calls (in order).
    func request(_ call: FrontDoorCall) throws(RPCError) -> (bytes: [UInt8], batchMethods: [String]) {
        guard call.requestEncoding == .json else {
            return (
                call.body,
                call.isBatch ? (try? GatewayV1.BatchRequest(protobufBytes: call.body))?.calls.map(\.method) ?? [] : []
            )
        }
        guard let text = String(validating: call.body, as: UTF8.self) else {
            throw .invalidArgument("the request body is not valid UTF-8 JSON")
        }
        do throws(DynamicError) {
            if call.isBatch { return try batchRequest(text) }
            let schema = try registry.method(call.method).request
            return (try transcoder.message(fromJSON: text, schema: schema).protobufBytes(), [])
        } catch {
            throw .invalidArgument("the request body is not a valid \(call.method) request: \(error.message)")
        }
    }

    /// The response body in the call's response encoding.
    func response(_ bytes: [UInt8], for call: FrontDoorCall, batchMethods: [String]) throws(RPCError) -> [UInt8] {
        guard call.responseEncoding == .json else { return bytes }
        do throws(DynamicError) {
            if call.isBatch { return Array(try batchResponse(bytes, methods: batchMethods).utf8) }
            let schema = try registry.method(call.method).response
            return Array(transcoder.json(from: try DynamicMessage(schema: schema, protobufBytes: bytes)).utf8)
        } catch {
            throw .internalError("the response of \(call.method) could not be written as JSON: \(error.message)")
        }
    }

    // MARK: - Batches

    /// A batch written in JSON whose calls' `request` are JSON objects of their methods' requests.
    ///
    /// Each `request` object is encoded with its method's schema and put back as the base64 the BatchRequest's
    /// JSON mapping expects, so the rest (names, `dependsOn`, references, unknown fields) is read by the one
    /// transcoder. A call naming an unknown method keeps no request: the batch's validation refuses it by name.
    private func batchRequest(_ text: String) throws(DynamicError) -> (bytes: [UInt8], batchMethods: [String]) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
        } catch {
            throw DynamicError(.invalidJSON, "the JSON does not parse: \(error.localizedDescription)")
        }
        guard var batch = parsed as? [String: Any] else {
            throw DynamicError(.invalidJSON, "expected an object with \"calls\"")
        }
        var methods: [String] = []
        if let calls = batch["calls"] as? [Any] {
            var rewritten: [Any] = []
            for (index, element) in calls.enumerated() {
                guard var call = element as? [String: Any] else {
                    throw DynamicError(.invalidJSON, "calls[\(index)]: expected an object")
                }
                let method = call["method"] as? String ?? ""
                methods.append(method)
                if let request = call["request"], !(request is NSNull) {
                    guard request is [String: Any] else {
                        throw DynamicError(
                            .invalidJSON, "calls[\(index)].request: expected an object (the request of \(method))")
                    }
                    if let schema = registry.methods[method] {
                        let message = try transcoder.message(fromJSONObject: request, schema: schema.request)
                        call["request"] = Data(message.protobufBytes()).base64EncodedString()
                    } else {
                        call["request"] = nil
                    }
                }
                rewritten.append(call)
            }
            batch["calls"] = rewritten
        }
        let schema = try registry.message(GatewayV1.BatchRequest.protoMessageName)
        return (try transcoder.message(fromJSONObject: batch, schema: schema).protobufBytes(), methods)
    }

    /// The BatchResponse's JSON mapping with each OK result's `response` written as the JSON of its method's
    /// response (instead of base64).
    private func batchResponse(_ bytes: [UInt8], methods: [String]) throws(DynamicError) -> String {
        let response: GatewayV1.BatchResponse
        do {
            response = try GatewayV1.BatchResponse(protobufBytes: bytes)
        } catch {
            throw DynamicError(.invalidMessage, "the batch response does not decode")
        }
        let resultSchema = try registry.message(GatewayV1.BatchResult.protoMessageName)
        var results: [String] = []
        for (index, result) in response.results.enumerated() {
            var summary = result
            summary.response = []
            var text = transcoder.json(
                from: try DynamicMessage(schema: resultSchema, protobufBytes: summary.protobufBytes()))
            if result.code == .ok, index < methods.count, let method = registry.methods[methods[index]] {
                let inner = transcoder.json(
                    from: try DynamicMessage(schema: method.response, protobufBytes: result.response))
                // The summary is a JSON object: its last character is the closing brace.
                text.removeLast()
                text += (text == "{" ? "" : ",") + "\"response\":" + inner + "}"
            }
            results.append(text)
        }
        return "{\"results\":[" + results.joined(separator: ",") + "]}"
    }
}
