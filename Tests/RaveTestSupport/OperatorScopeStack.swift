import Foundation
import Identity
import RavePostgres
import RaveRPC
import RaveRuntime
import RaveServices

/// Who makes an admin call in the operator-scope tests, as the gateway forwards it (docs/identity.md, "Operators").
public enum AdminCallerMetadata: Sendable, Hashable {
    /// The admin client certificate: the admin scope, no operator.
    case certificate
    /// An operator account of `role` ("viewer", …, or anything a forged or buggy gateway might send) acting for
    /// `publisher` (32 hex digits, or "*" for every publisher).
    case operatorAccount(role: String, publisher: String)

    /// The caller metadata the gateway sends for this caller.
    public var metadata: [String: String] {
        var metadata = [
            MetadataKey.callerUserID: "", MetadataKey.callerAppID: "", MetadataKey.callerScopes: Caller.adminScope,
        ]
        switch self {
        case .certificate:
            metadata[MetadataKey.callerSessionID] = ""
            metadata[MetadataKey.callerAdmin] = "admin"
        case .operatorAccount(let role, let publisher):
            metadata[MetadataKey.callerSessionID] = RaveID.random().hex
            metadata[MetadataKey.callerOperator] = RaveID.random().hex
            metadata[MetadataKey.callerOperatorRole] = role
            metadata[MetadataKey.callerOperatorPublisher] = publisher
        }
        return metadata
    }

    /// Call options carrying the metadata, never retried (a refusal must be seen as it is).
    public var options: CallOptions { CallOptions(timeout: .seconds(10), metadata: metadata, maxRetries: 0) }
}

/// A real identity service and the service under test, both served over mutual TLS by `ServiceUnderTest` on fresh
/// databases, the service reaching identity with its own certificate; identity holds two publishers, A with two
/// applications and B with one, made through `IdentityAdmin` with the admin certificate's metadata.
public struct OperatorScopeStack: Sendable {
    public let identity: ServiceUnderTest
    public let service: ServiceUnderTest
    /// A client of the service presenting the gateway's certificate (the only role that may assert a caller).
    public let client: RPCClient
    public let publisherA: String
    public let publisherB: String
    /// Applications of publisher A.
    public let appA: String
    public let otherAppA: String
    /// An application of publisher B.
    public let appB: String

    /// An operator of publisher A with `role`.
    public func operatorOfA(_ role: String = "operator") -> CallOptions {
        AdminCallerMetadata.operatorAccount(role: role, publisher: publisherA).options
    }

    /// An operator of publisher B with `role`.
    public func operatorOfB(_ role: String = "operator") -> CallOptions {
        AdminCallerMetadata.operatorAccount(role: role, publisher: publisherB).options
    }

    /// An owner of every publisher.
    public var ownerOfAll: CallOptions { AdminCallerMetadata.operatorAccount(role: "owner", publisher: "*").options }

    /// The admin certificate.
    public var certificate: CallOptions { AdminCallerMetadata.certificate.options }

    /// Starts the real identity and then `name` (`services`, on `migrations`, with `RAVE_<NAME>_IDENTITY_ADDRESS`
    /// naming identity and `settings` added to its environment), runs `body`, and stops both whether it threw or
    /// not.
    public static func with(
        _ name: String, migrations: String, settings: [String: String] = [:],
        services: @escaping @Sendable (ServiceContext) async throws -> [any RPCService],
        _ body: (OperatorScopeStack) async throws -> Void
    ) async throws {
        try await ScratchDatabase.with(prefix: "rave_scope_identity_") { identityURL in
            try await ScratchDatabase.with(prefix: "rave_scope_\(name)_") { serviceURL in
                let certificates = try ServiceUnderTest.makeCertificates(for: name, peers: ["gateway", "identity"])
                let identity = try await ServiceUnderTest.start(
                    "identity", certificates: certificates, databaseURL: identityURL,
                    migrations: .directory(IdentityMain.migrationsDirectory)
                ) { context in
                    try await IdentityDependencies.start(
                        pool: context.pool, secretKeys: try SecretKeyFile.ring(), passwordParameters: .testing
                    ).rpcServices
                }
                var failure: (any Error)?
                do {
                    let service = try await ServiceUnderTest.start(
                        name, certificates: certificates, databaseURL: serviceURL, migrations: .directory(migrations),
                        environment: settings.merging(
                            ["RAVE_\(name.uppercased())_IDENTITY_ADDRESS": "127.0.0.1:\(identity.port)"]
                        ) { _, identity in identity },
                        services: services)
                    let client = try service.client(as: "gateway")
                    do {
                        try await body(try await make(identity: identity, service: service, client: client))
                    } catch {
                        failure = error
                    }
                    client.close()
                    try await service.stop()
                } catch {
                    failure = failure ?? error
                }
                try await identity.stop()
                if let failure { throw failure }
            }
        }
    }

    private static func make(
        identity: ServiceUnderTest, service: ServiceUnderTest, client: RPCClient
    ) async throws -> OperatorScopeStack {
        let identityClient = try identity.client(as: "gateway")
        defer { identityClient.close() }
        let admin = IdentityV1.IdentityAdminClient(caller: identityClient)
        let options = AdminCallerMetadata.certificate.options
        func publisher(_ name: String) async throws -> String {
            try await admin.createPublisher(.init(name: name), options: options).publisher?.publisherId ?? ""
        }
        func application(_ publisher: String, _ name: String) async throws -> String {
            try await admin.createApplication(.init(publisherId: publisher, name: name), options: options)
                .application?.appId ?? ""
        }
        let publisherA = try await publisher("Publisher A")
        let publisherB = try await publisher("Publisher B")
        return OperatorScopeStack(
            identity: identity, service: service, client: client, publisherA: publisherA, publisherB: publisherB,
            appA: try await application(publisherA, "Game A"), otherAppA: try await application(publisherA, "Game A2"),
            appB: try await application(publisherB, "Game B"))
    }
}

/// The error `body` threw as the client received it; nil when it did not throw.
public func rpcFailure(_ body: () async throws -> Void) async -> RPCError? {
    do {
        try await body()
        return nil
    } catch let error as RPCError {
        return error
    } catch {
        return RPCError(.unknown, "not an RPCError: \(error)")
    }
}
