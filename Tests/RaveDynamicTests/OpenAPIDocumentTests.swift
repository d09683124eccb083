import Foundation
import RaveDynamic
import RaveMessages
import Testing

/// docs/openapi.json (`OpenAPIDocument`, written by rave-protogen) against the transcoder the front door uses: the
/// same field names and value shapes for every message it documents, and the JSON the transcoder writes is valid
/// for the document's schemas.
@Suite struct OpenAPIDocumentTests {
    /// The fields the front door writes as JSON objects instead of base64 (docs/gateway.md, "Batch over HTTP").
    static let objectFields: Set<String> = [
        "rave.gateway.v1.BatchCall.request", "rave.gateway.v1.BatchResult.response",
    ]

    @Test func everyMessageSchemaHasTheTranscodersFieldNamesAndShapes() throws {
        let document = try OpenAPIJSON()
        var checked = 0
        for (name, schema) in document.schemas {
            guard let message = Fixtures.registry.messages[name] else { continue }
            checked += 1
            let properties = schema["properties"] as? [String: Any] ?? [:]
            #expect(Set(properties.keys) == Set(message.fields.map(\.jsonName)), "\(name)")
            // Unset fields are left out of the JSON, so none can be required; unknown fields are refused.
            #expect(schema["required"] == nil, "\(name)")
            #expect(schema["additionalProperties"] as? Bool == false, "\(name)")
            for field in message.fields {
                let property = try #require(properties[field.jsonName] as? [String: Any], "\(name).\(field.name)")
                let problem = Self.shapeProblem(field, property, in: "\(name).\(field.name)", document: document)
                #expect(problem == nil, "\(name).\(field.jsonName): \(problem ?? "")")
            }
        }
        #expect(checked > 100)
    }

    @Test func everyOperationTakesAndAnswersItsMethodsMessages() throws {
        let document = try OpenAPIJSON()
        for (path, item) in document.paths {
            guard let post = item["post"] as? [String: Any] else {
                // The archive downloads are GETs joining a method's chunks (GatewayExportDownloadTests).
                #expect(item["get"] != nil && path.hasSuffix("/archive"), "\(path)")
                continue
            }
            let method = try Fixtures.registry.method(try #require(post["x-rave-method"] as? String))
            #expect(path == "/v1/\(method.fullName)" || path == "/v1/batch")
            #expect(OpenAPIJSON.jsonReference(in: post["requestBody"]) == method.request.fullName, "\(path)")
            let ok = (post["responses"] as? [String: Any])?["200"]
            #expect(OpenAPIJSON.jsonReference(in: ok) == method.response.fullName, "\(path)")
        }
    }

    @Test func whatTheTranscoderWritesIsValidForTheDocument() throws {
        let document = try OpenAPIJSON()
        let transcoder = JSONTranscoder(registry: Fixtures.registry)
        var validated = 0
        for name in document.schemas.keys.sorted() {
            guard let schema = Fixtures.registry.messages[name] else { continue }
            let message = try Self.sample(schema, depth: 0)
            let json = try JSONSerialization.jsonObject(with: Data(transcoder.json(from: message).utf8))
            let problems = document.violations(of: json, against: ["$ref": "#/components/schemas/\(name)"], at: name)
            #expect(problems.isEmpty, "\(name): \(problems)")
            // And the empty message, which is `{}`.
            let empty = try JSONSerialization.jsonObject(
                with: Data(transcoder.json(from: DynamicMessage(schema: schema)).utf8))
            #expect(document.violations(of: empty, against: ["$ref": "#/components/schemas/\(name)"], at: name).isEmpty)
            validated += 1
        }
        #expect(validated > 100)
    }

    @Test func aBatchCallsRequestIsAnObjectNotBase64() throws {
        let document = try OpenAPIJSON()
        let call =
            ["name": "me", "method": "rave.identity.v1.Identity/GetCurrentUser", "request": [:]] as [String: Any]
        let schema = ["$ref": "#/components/schemas/rave.gateway.v1.BatchCall"]
        #expect(document.violations(of: call, against: schema, at: "call").isEmpty)
        let encoded = ["name": "me", "method": "rave.identity.v1.Identity/GetCurrentUser", "request": "CgA="]
        #expect(!document.violations(of: encoded, against: schema, at: "call").isEmpty)
        // A field the message does not have is refused, as the transcoder refuses it.
        #expect(!document.violations(of: ["nme": "me"], against: schema, at: "call").isEmpty)
    }

    // MARK: - Helpers

    /// Why `property` does not describe `field` as the transcoder writes it; nil when it does.
    static func shapeProblem(
        _ field: FieldSchema, _ property: [String: Any], in name: String, document: OpenAPIJSON
    )
        -> String?
    {
        if objectFields.contains(name) { return property["type"] as? String == "object" ? nil : "not an object" }
        if field.isMap {
            guard property["type"] as? String == "object",
                let values = property["additionalProperties"] as? [String: Any],
                let entry = field.messageType, entry.fields.count == 2
            else { return "not a map" }
            return elementProblem(entry.fields[1], values, document: document)
        }
        if field.isRepeated {
            guard property["type"] as? String == "array", let items = property["items"] as? [String: Any] else {
                return "not an array"
            }
            return elementProblem(field, items, document: document)
        }
        return elementProblem(field, property, document: document)
    }

    private static func elementProblem(_ field: FieldSchema, _ schema: [String: Any], document: OpenAPIJSON) -> String?
    {
        let type = schema["type"]
        switch field.type {
        case .message:
            return schema["$ref"] as? String == "#/components/schemas/\(field.messageType?.fullName ?? "")"
                ? nil : "not a reference to its message"
        case .enumeration:
            guard let enumType = field.enumType,
                schema["$ref"] as? String == "#/components/schemas/\(enumType.fullName)",
                let names = document.schemas[enumType.fullName]?["enum"] as? [String]
            else { return "not a reference to its enum" }
            return Set(names) == Set(enumType.values.map(\.name)) ? nil : "other enum names \(names)"
        case .int64, .sint64, .sfixed64, .uint64, .fixed64:
            return type as? [String] == ["string", "integer"] ? nil : "a 64-bit integer is not string or integer"
        case .int32, .sint32, .sfixed32, .uint32, .fixed32:
            return type as? String == "integer" ? nil : "not an integer"
        case .double, .float: return schema["anyOf"] != nil ? nil : "not a number or NaN/Infinity"
        case .bool: return type as? String == "boolean" ? nil : "not a boolean"
        case .string: return type as? String == "string" ? nil : "not a string"
        case .bytes:
            return type as? String == "string" && schema["contentEncoding"] as? String == "base64" ? nil : "not base64"
        }
    }

    /// A message of `schema` with every field set to a value other than its default (one member per oneof; the
    /// batch's request and response bytes, which the front door rewrites, left out).
    static func sample(_ schema: MessageSchema, depth: Int) throws -> DynamicMessage {
        var message = DynamicMessage(schema: schema)
        var oneofsSet: Set<Int> = []
        for field in schema.fields where !objectFields.contains("\(schema.fullName).\(field.name)") {
            if let group = field.oneofGroup, !oneofsSet.insert(group).inserted { continue }
            if field.type == .message, depth > 4 { continue }
            if field.isMap, let entry = field.messageType {
                var pair = DynamicMessage(schema: entry)
                try pair.setValue(try element(entry.fields[0], depth: depth), of: entry.fields[0])
                try pair.setValue(try element(entry.fields[1], depth: depth), of: entry.fields[1])
                try message.setValue(.list([.message(pair)]), of: field)
            } else if field.isRepeated {
                try message.setValue(
                    .list([try element(field, depth: depth), try element(field, depth: depth)]), of: field)
            } else {
                try message.setValue(try element(field, depth: depth), of: field)
            }
        }
        return message
    }

    private static func element(_ field: FieldSchema, depth: Int) throws -> DynamicValue {
        switch field.type {
        case .double: return .double(-2.5)
        case .float: return .float(0.25)
        case .int32, .sint32, .sfixed32: return .int32(Int32.min)
        case .int64, .sint64, .sfixed64: return .int64(Int64.min)
        case .uint32, .fixed32: return .uint32(UInt32.max)
        case .uint64, .fixed64: return .uint64(UInt64.max)
        case .bool: return .bool(true)
        case .string: return .string("é \"quoted\"\n")
        case .bytes: return .bytes([0, 0xfb, 0xff])
        case .enumeration: return .enumeration(field.enumType?.values.last?.number ?? 1)
        case .message:
            let type = try #require(field.messageType)
            return .message(try sample(type, depth: depth + 1))
        }
    }
}
