import Foundation
import RaveGatewayRules

/// Writes the OpenAPI 3.1 document of the gateway's HTTP/JSON front door (docs/gateway.md, "HTTP/JSON front
/// door"): one operation per method the gateway routes, each with the credential `MethodAccess` gives it, plus
/// the batch under its full name and its short path `/v1/batch`.
struct OpenAPIGenerator {
    let files: [FileDescriptor]

    /// The gateway's own service: its one method, Batch, is documented with its HTTP form.
    static let batchMethod = "rave.gateway.v1.Gateway/Batch"
    /// The short path of the batch, the same operation as `/v1/rave.gateway.v1.Gateway/Batch`.
    static let batchPath = "/v1/batch"
    /// Answered by every server itself on its binary port (`RPCServer`), never routed to a service.
    static let unroutedPackages: Set<String> = ["rave.rpc.v1"]

    /// One operation's inputs.
    private struct Operation {
        var method: String
        var service: ServiceDescriptor
        var rpc: ServiceDescriptor.Method
        var comment: String?
        /// nil for the batch, which needs no credential itself.
        var access: MethodAccess?
    }

    /// The document as pretty-printed JSON, ending with a newline.
    func generate() throws -> String {
        let operations = try self.operations()
        let statusCodes = try Self.statusCodes(in: files)
        let schemas = OpenAPISchemas(files: files, overrides: Self.batchOverrides)
        var roots = ["rave.rpc.v1.StatusCode"]
        for operation in operations {
            roots += [String(operation.rpc.inputType.dropFirst()), String(operation.rpc.outputType.dropFirst())]
        }
        var componentSchemas: [(key: String, value: JSONValue)] = [("Error", Self.errorSchema)]
        for fullName in try schemas.reachable(from: roots) {
            componentSchemas.append((fullName, try schemas.schema(of: fullName)))
        }
        var paths: [(key: String, value: JSONValue)] = []
        var operationIDs: Set<String> = []
        for operation in operations {
            let operationID = operation.service.name + "_" + operation.rpc.name
            guard operationIDs.insert(operationID).inserted else {
                throw GeneratorError(
                    "two services are named \(operation.service.name): operationId \(operationID) repeats")
            }
            let item = try pathItem(operation, operationID: operationID, schemas: schemas, statusCodes: statusCodes)
            paths.append(("/v1/" + operation.method, item))
            if operation.method == Self.batchMethod {
                let alias = try pathItem(operation, operationID: "Batch", schemas: schemas, statusCodes: statusCodes)
                paths.append((Self.batchPath, alias))
            }
        }
        let document: JSONValue = [
            "openapi": "3.1.0",
            "info": [
                "title": "Rave Backend: the gateway's HTTP/JSON front door",
                "version": "v1",
                "description": .string(Self.overview),
            ],
            "servers": [
                ["url": "/", "description": "the gateway that serves this document (at /v1/openapi.json)"],
                ["url": "https://127.0.0.1:8443", "description": "`make run`"],
            ],
            "tags": .array(tags(of: operations)),
            "paths": .object(paths),
            "components": [
                "schemas": .object(componentSchemas),
                "responses": .object(Self.errorResponses(statusCodes)),
                "parameters": Self.parameters,
                "headers": Self.headers,
                "securitySchemes": Self.securitySchemes,
            ],
        ]
        return document.prettyText + "\n"
    }

    // MARK: - Operations

    /// Every method the front door serves, in file, service and method order.
    private func operations() throws -> [Operation] {
        var operations: [Operation] = []
        for file in files where !Self.unroutedPackages.contains(file.package) {
            for (serviceIndex, service) in file.services.enumerated() {
                for (methodIndex, rpc) in service.methods.enumerated() {
                    let method = "\(file.package).\(service.name)/\(rpc.name)"
                    let access = MethodAccess(method: method)
                    guard access != nil || method == Self.batchMethod else { continue }
                    operations.append(
                        Operation(
                            method: method, service: service, rpc: rpc,
                            comment: file.comments[[6, serviceIndex, 2, methodIndex]],
                            access: method == Self.batchMethod ? nil : access))
                }
            }
        }
        return operations
    }

    private func tags(of operations: [Operation]) -> [JSONValue] {
        var seen: Set<String> = []
        var tags: [JSONValue] = []
        for file in files {
            for (index, service) in file.services.enumerated()
            where operations.contains(where: { $0.service.name == service.name }) && seen.insert(service.name).inserted
            {
                let comment = file.comments[[6, index]].map(commentText)
                tags.append(
                    .members([
                        ("name", .string(service.name)),
                        (
                            "description",
                            .string((comment.map { $0 + "\n\n" } ?? "") + "`\(file.package).\(service.name)`")
                        ),
                    ]))
            }
        }
        return tags
    }

    private func pathItem(
        _ operation: Operation, operationID: String, schemas: OpenAPISchemas, statusCodes: [(name: String, number: Int)]
    ) throws -> JSONValue {
        let input = String(operation.rpc.inputType.dropFirst())
        let output = String(operation.rpc.outputType.dropFirst())
        let request = try schemas.type(input)
        // Codes a method's comments name get their HTTP status documented, beside the ones every call can meet.
        var texts = [operation.comment, request.comment].compactMap { $0 }
        texts += request.memberComments.values
        var statuses: Set<Int> = [400, 403, 404, 429, 503, 504]
        if operation.access != .anonymous { statuses.insert(401) }
        for code in statusCodes where code.number != 0 && texts.contains(where: { Self.names($0, code.name) }) {
            statuses.insert(HTTPStatusMapping.httpStatus(ofCode: code.number))
        }
        var responses: [(key: String, value: JSONValue)] = [
            (
                "200",
                [
                    "description": .string("OK: the `\(output)` message."),
                    "headers": ["X-Request-Id": ["$ref": "#/components/headers/X-Request-Id"]],
                    "content": Self.content(of: output),
                ]
            )
        ]
        for status in statuses.sorted() {
            responses.append((String(status), ["$ref": .string("#/components/responses/\(status)")]))
        }
        responses.append(("default", ["$ref": "#/components/responses/default"]))
        let comment = operation.comment.map(commentText)
        let post: JSONValue = .members([
            ("operationId", .string(operationID)),
            ("tags", [.string(operation.service.name)]),
            ("summary", comment.map { .string(Self.firstSentence(of: $0)) }),
            ("description", .string(Self.description(of: operation, comment: comment))),
            ("security", Self.security(operation.access)),
            (
                "parameters",
                [
                    ["$ref": "#/components/parameters/Idempotency-Key"],
                    ["$ref": "#/components/parameters/X-Request-Id"],
                    ["$ref": "#/components/parameters/X-Rave-Timeout-Ms"],
                ]
            ),
            (
                "requestBody",
                [
                    "description": .string("The `\(input)` message; an empty body is the empty message."),
                    "required": false, "content": Self.content(of: input),
                ]
            ),
            ("responses", .object(responses)),
            ("x-rave-method", .string(operation.method)),
        ])
        return ["post": post]
    }

    /// The security requirement of a method with `access` (nil: the batch, whose calls are each checked).
    static func security(_ access: MethodAccess?) -> JSONValue {
        switch access {
        case .anonymous: []
        case .login: [[:], ["bearerAuth": []]]
        case .player: [["bearerAuth": []]]
        case .admin: [["mutualTLS": []], ["operatorAuth": []]]
        case nil: [[:], ["bearerAuth": []], ["operatorAuth": []], ["mutualTLS": []]]
        }
    }

    /// Who may call admin method `method`: the admin certificate, or an operator whose role reaches it (`AdminRoles`).
    static func adminCredential(_ method: String) -> String {
        let certificate = "Needs the admin client certificate (role `rave://admin`)"
        guard let role = AdminRoles.leastRole[method] else {
            return certificate + "; no operator role reaches it yet."
        }
        let write =
            AdminRoles.isWrite(method)
            ? " It is a write: an operator must send `X-Rave-Reason`, and the call is in the audit log." : ""
        return certificate + ", or an operator's access token (`operatorAuth`) of role `\(role)` or higher." + write
    }

    private static func description(of operation: Operation, comment: String?) -> String {
        let credential: String
        switch operation.access {
        case .anonymous: credential = "No credential: for clients without an account; no caller is passed on."
        case .login:
            credential =
                "No credential needed. A valid access token, when sent, is passed on (a guest signing in is upgraded)."
        case .player: credential = "Needs `Authorization: Bearer <access token>`."
        case .admin:
            credential = Self.adminCredential(operation.method)
        case nil:
            credential =
                "No credential for the batch itself: each call is checked like a single call (token, admin certificate)."
        }
        let method = "The protocol's method `\(operation.method)`."
        return [comment, credential + " " + method].compactMap { $0 }.joined(separator: "\n\n")
    }

    private static func content(of message: String) -> JSONValue {
        [
            "application/json": ["schema": OpenAPISchemas.reference(message)],
            "application/x-protobuf": [
                "schema": [
                    "type": "string", "format": "binary",
                    "description": .string("The `\(message)` message in the protobuf wire format."),
                ]
            ],
        ]
    }

    /// Whether `text` names the status code `name` as a word (not as part of a longer name).
    private static func names(_ text: String, _ name: String) -> Bool {
        var searchStart = text.startIndex
        while let range = text.range(of: name, range: searchStart..<text.endIndex) {
            let before = range.lowerBound == text.startIndex ? nil : text[text.index(before: range.lowerBound)]
            let after = range.upperBound == text.endIndex ? nil : text[range.upperBound]
            let isWordCharacter = { (character: Character?) in character.map { $0.isLetter || $0 == "_" } ?? false }
            if !isWordCharacter(before) && !isWordCharacter(after) { return true }
            searchStart = range.upperBound
        }
        return false
    }

    /// The first sentence of a comment, on one line.
    private static func firstSentence(of comment: String) -> String {
        let text = comment.replacingOccurrences(of: "\n", with: " ")
        guard let end = text.range(of: ". ") else { return text }
        return String(text[..<end.lowerBound]) + "."
    }

    /// The status codes of `rave.rpc.v1.StatusCode`, by number.
    private static func statusCodes(in files: [FileDescriptor]) throws -> [(name: String, number: Int)] {
        let enums = files.filter { $0.package == "rave.rpc.v1" }.flatMap(\.enums)
        guard let codes = enums.first(where: { $0.name == "StatusCode" }) else {
            throw GeneratorError("rave.rpc.v1.StatusCode is missing from the descriptors")
        }
        return codes.values.map { ($0.name, Int($0.number)) }
    }
}
