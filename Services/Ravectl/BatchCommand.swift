import Foundation
import RaveDynamic
import RaveMessages
import RaveProtobuf

/// `ravectl batch FILE.json`: several calls in one round trip through the gateway's Batch method.
enum BatchCommand {
    static let usage = "ravectl batch FILE.json (- for stdin) \(GatewayTarget.usage)"
    static let help = """
        \(usage)
          Sends the calls of FILE in one rave.gateway.v1.Gateway/Batch call and prints each result in request
          order. FILE holds {"calls": [{"name": "me", "method": "rave.identity.v1.Identity/GetCurrentUser",
          "request": {…}, "dependsOn": ["…"], "references": [{"fromCall": "…", "fromPath": "user.profile.userId",
          "toPath": "userId"}]}]}; requests are protobuf JSON, references copy a response field of an earlier call
          into this call's request. Exits 1 unless every call succeeded.
        \(GatewayTarget.help)
        """
    private static let batchMethod = "rave.gateway.v1.Gateway/Batch"

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help)
            return 0
        }
        let options = try Arguments(arguments, valueOptions: GatewayTarget.valueOptions)
        guard options.positionals.count == 1 else { throw UsageError("batch takes one FILE.json\n\n\(help)") }
        let file = options.positionals[0]
        let text: String
        if file == "-" {
            text = GatewayTarget.readStandardInput()
        } else {
            guard let data = FileManager.default.contents(atPath: file) else { throw UsageError("cannot read \(file)") }
            text = String(decoding: data, as: UTF8.self)
        }
        let (request, methods) = try batchRequest(fromJSON: text)
        let bytes = try await GatewayTarget.call(
            method: batchMethod, request: request.protobufBytes(), options: options,
            credentials: try CredentialStore.load())
        let response = try GatewayV1.BatchResponse(protobufBytes: bytes)
        let transcoder = JSONTranscoder()
        var results: [[String: Any]] = []
        for (index, result) in response.results.enumerated() {
            var entry: [String: Any] = ["name": result.name, "code": "\(result.code)"]
            if !result.message.isEmpty { entry["message"] = result.message }
            if result.dependencyFailed { entry["dependencyFailed"] = true }
            if result.code == .ok, index < methods.count {
                let json = try transcoder.responseJSON(method: methods[index], protobufBytes: result.response)
                entry["response"] = try JSONSerialization.jsonObject(with: Data(json.utf8))
            }
            results.append(entry)
        }
        let output = try JSONSerialization.data(
            withJSONObject: ["results": results], options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: output, as: UTF8.self))
        return response.results.allSatisfy { $0.code == .ok } ? 0 : 1
    }

    /// The Batch request a batch file describes, and each call's method; references are checked here
    /// against the descriptors so a typo fails before anything is sent.
    static func batchRequest(fromJSON text: String) throws -> (GatewayV1.BatchRequest, [String]) {
        guard let root = try? JSONSerialization.jsonObject(with: Data(text.utf8)) else {
            throw DynamicError(.invalidJSON, "the batch file is not valid JSON")
        }
        guard let calls = (root as? [String: Any])?["calls"] as? [[String: Any]] ?? root as? [[String: Any]] else {
            throw DynamicError(.invalidJSON, "the batch file must be {\"calls\": [ … ]}")
        }
        let registry = DescriptorRegistry.shared
        let transcoder = JSONTranscoder(registry: registry)
        var request = GatewayV1.BatchRequest()
        var responseTypes: [String: MessageSchema] = [:]
        var methods: [String] = []
        for (index, call) in calls.enumerated() {
            func field(_ camel: String, _ snake: String) -> Any? { call[camel] ?? call[snake] }
            guard let name = call["name"] as? String, let method = call["method"] as? String else {
                throw DynamicError(.invalidJSON, "call \(index) needs a \"name\" and a \"method\"")
            }
            do {
                let schema = try registry.method(method)
                var batchCall = GatewayV1.BatchCall()
                batchCall.name = name
                batchCall.method = method
                batchCall.request = try transcoder.message(
                    fromJSONObject: call["request"] ?? [:], schema: schema.request
                )
                .protobufBytes()
                batchCall.dependsOn = field("dependsOn", "depends_on") as? [String] ?? []
                for reference in field("references", "references") as? [[String: Any]] ?? [] {
                    let value = { (camel: String, snake: String) in
                        reference[camel] as? String ?? reference[snake] as? String ?? ""
                    }
                    let copy = GatewayV1.FieldReference(
                        fromCall: value("fromCall", "from_call"), fromPath: value("fromPath", "from_path"),
                        toPath: value("toPath", "to_path"))
                    let destination = try FieldPath(copy.toPath).resolve(in: schema.request)
                    if let source = responseTypes[copy.fromCall] {
                        try destination.checkAccepts(valuesAt: try FieldPath(copy.fromPath).resolve(in: source))
                    }
                    batchCall.references.append(copy)
                }
                responseTypes[name] = schema.response
                methods.append(method)
                request.calls.append(batchCall)
            } catch {
                throw DynamicError(error.kind, "call \"\(name)\": \(error.message)")
            }
        }
        return (request, methods)
    }
}
