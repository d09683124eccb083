import Foundation
import RaveMessages
import RaveRPC
import Testing

@testable import Gateway

/// docs/openapi.json (`OpenAPIDocument`) documents exactly the methods the gateway routes, each with the
/// credential `MethodRoute` demands of it.
@Suite struct OpenAPISecurityTests {
    /// Answered by every server itself on its binary port, never routed to a service, so not in the document.
    static let servedByEveryServer = "rave.rpc.v1.Health/Check"
    static let batch = "rave.gateway.v1.Gateway/Batch"

    /// Each operation's `post`, by path.
    let operations: [String: [String: Any]]

    init() throws {
        let root = try JSONSerialization.jsonObject(with: Data(OpenAPIDocument.json.utf8)) as? [String: Any]
        let paths = root?["paths"] as? [String: [String: Any]] ?? [:]
        operations = paths.compactMapValues { $0["post"] as? [String: Any] }
    }

    /// The schemes of each alternative of an operation's `security`, sorted: `[[]]`-like lists compare plainly.
    private func security(_ path: String) -> [[String]]? {
        guard let requirements = operations[path]?["security"] as? [[String: Any]] else { return nil }
        return requirements.map { $0.keys.sorted() }.sorted { $0.joined(separator: ",") < $1.joined(separator: ",") }
    }

    /// The security a method with `access` must have: no scheme is the empty alternative (no credential).
    private func expectedSecurity(_ access: MethodRoute.Access) -> [[String]] {
        switch access {
        case .anonymous: []
        case .login: [[], ["bearerAuth"]]
        case .player: [["bearerAuth"]]
        case .admin: [["mutualTLS"], ["operatorAuth"]]
        }
    }

    @Test func everyRoutedMethodHasAnOperationWithTheCredentialTheGatewayDemands() throws {
        var routed = 0
        for method in MethodRoute.knownMethods.sorted() where method != Self.batch {
            let path = "/v1/\(method)"
            guard let route = try? MethodRoute(method: method), method != Self.servedByEveryServer else {
                #expect(operations[path] == nil, "\(method) is not routed but is documented")
                continue
            }
            routed += 1
            #expect(operations[path]?["x-rave-method"] as? String == method)
            #expect(security(path) == expectedSecurity(route.access), "\(method) is \(route.access)")
        }
        // The methods of every public and admin block of Proto/, and the batch under its two paths.
        #expect(routed > 100)
        #expect(operations.count == routed + 2)
    }

    @Test func theBatchNeedsNoCredentialItselfUnderBothPaths() {
        for path in ["/v1/\(Self.batch)", "/v1/batch"] {
            #expect(operations[path]?["x-rave-method"] as? String == Self.batch)
            #expect(security(path) == [[], ["bearerAuth"], ["mutualTLS"], ["operatorAuth"]])
        }
        #expect(
            operations["/v1/batch"]?["operationId"] as? String != operations["/v1/\(Self.batch)"]?["operationId"]
                as? String)
    }

    @Test func operationsNeedingATokenDocumentUnauthenticated() throws {
        for (path, post) in operations {
            let responses = try #require(post["responses"] as? [String: Any])
            for status in ["200", "400", "403", "404", "429", "503", "504", "default"] {
                #expect(responses[status] != nil, "\(path) lacks \(status)")
            }
            let needsNoToken = security(path) == []
            #expect((responses["401"] == nil) == needsNoToken, "\(path)")
        }
    }

    @Test func theConstantIsTheTextOfDocsOpenAPIJSON() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("docs/openapi.json"), encoding: .utf8)
        #expect(file == OpenAPIDocument.json)
    }
}
