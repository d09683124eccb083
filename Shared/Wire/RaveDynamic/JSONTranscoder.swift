import Foundation

/// Converts requests and responses of any method between protobuf bytes and JSON.
///
/// The JSON is protobuf's canonical mapping: lowerCamelCase names (the .proto names are accepted on input), enums by name (numbers
/// accepted), 64-bit integers as strings (numbers accepted), bytes as base64, maps as objects, unset
/// fields left out (and missing ones read as defaults). A JSON field the message does not have is an
/// error naming it.
///
/// For tools and the gateway's batch references, not for hot paths: parsing goes through Foundation.
public struct JSONTranscoder: Sendable {
    /// Where method and message names are looked up.
    public let registry: DescriptorRegistry

    public init(registry: DescriptorRegistry = .shared) {
        self.registry = registry
    }

    /// The protobuf encoding of `method`'s request written as JSON (`""` is the empty request).
    public func requestBytes(method: String, json: String) throws(DynamicError) -> [UInt8] {
        try message(fromJSON: json, schema: registry.method(method).request).protobufBytes()
    }

    /// `method`'s response, decoded from protobuf bytes, as JSON.
    public func responseJSON(
        method: String, protobufBytes: [UInt8], pretty: Bool = false
    ) throws(DynamicError)
        -> String
    {
        let message = try DynamicMessage(schema: registry.method(method).response, protobufBytes: protobufBytes)
        return json(from: message, pretty: pretty)
    }

    /// Parses JSON text as a `schema` message; empty text is the empty message.
    public func message(fromJSON json: String, schema: MessageSchema) throws(DynamicError) -> DynamicMessage {
        if json.allSatisfy(\.isWhitespace) { return DynamicMessage(schema: schema) }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        } catch {
            throw DynamicError(.invalidJSON, "the JSON for \(schema.fullName) does not parse: \(error)")
        }
        return try message(fromJSONObject: object, schema: schema)
    }

    /// Reads a value JSONSerialization produced (a dictionary for a message) as a `schema` message.
    public func message(fromJSONObject object: Any, schema: MessageSchema) throws(DynamicError) -> DynamicMessage {
        var reader = JSONValueReader()
        return try reader.message(object, schema: schema, path: "")
    }

    /// The message as JSON text: compact, or indented by two spaces when `pretty`.
    public func json(from message: DynamicMessage, pretty: Bool = false) -> String {
        var writer = JSONTextWriter(pretty: pretty)
        writer.writeMessage(message, depth: 0)
        return writer.text
    }
}
