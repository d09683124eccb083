import Foundation
import RaveMessages
import RaveRPC
import RaveTransport
import Testing

/// The attacker holding one of the deployment's certificates, connecting straight to the services' ports: a
/// certificate of the CA grants nothing but its role, and only the gateway may say who calls.
@Suite("Trust boundaries: certificates by role against the real services")
struct TrustBoundaryStoryTests {
    @Test("the client and admin certificates reach nothing on a service port; the gateway still serves players")
    func clientAndAdminCertificatesReachNothingOnServicePorts() async throws {
        try await SystemStack.with { stack in
            // A real player with money, as in the attack: B with 14.00, A a second account.
            let appID = try await stack.makeApplication()
            let victim = try await stack.guest(appID: appID)
            let thief = try await stack.guest(appID: appID)

            for name in ["client", "admin"] {
                // The merge participant moved B's money to A with no merge behind it.
                if let wallet = stack.ports["wallet"]?.rpc {
                    let connection = try await stack.directConnection(port: wallet, certificate: name)
                    defer { connection.close() }
                    var merge = MergeV1.MergeUsersRequest()
                    merge.mergeId = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
                    merge.sourceUserId = victim.userID
                    merge.targetUserId = thief.userID
                    await expectDenied(
                        "rave.merge.v1.MergeParticipant/MergeUsers", merge.protobufBytes(), on: connection, as: name)
                    // The operator's deposit, by asserting the admin scope in metadata.
                    await expectDenied(
                        "rave.wallet.v1.WalletAdmin/Deposit", [], on: connection, as: name,
                        metadata: [MetadataKey.callerScopes: Caller.adminScope, MetadataKey.callerAppID: appID])
                    await expectDenied("rave.wallet.v1.Wallet/GetWallet", [], on: connection, as: name)
                }
                if let identity = stack.ports["identity"]?.rpc {
                    let connection = try await stack.directConnection(port: identity, certificate: name)
                    defer { connection.close() }
                    // Acting as B by naming B in metadata.
                    await expectDenied(
                        "rave.identity.v1.Identity/GetCurrentUser", [], on: connection, as: name,
                        metadata: [MetadataKey.callerUserID: victim.userID, MetadataKey.callerAppID: appID])
                    await expectDenied("rave.identity.v1.Identity/GetCurrentUser", [], on: connection, as: name)
                    // The keys that verify every token.
                    await expectDenied("rave.identity.v1.IdentityInternal/SigningKeys", [], on: connection, as: name)
                }
                for service in stack.services where service != "identity" {
                    guard let port = stack.ports[service]?.rpc else { continue }
                    let connection = try await stack.directConnection(port: port, certificate: name)
                    defer { connection.close() }
                    await expectDenied("rave.merge.v1.MergeParticipant/MergeUsers", [], on: connection, as: name)
                    if SystemStack.eventSinks.contains(service) {
                        await expectDenied("rave.events.v1.EventSink/DeliverEvents", [], on: connection, as: name)
                    }
                }
            }

            // A service's own certificate does not make it the gateway: the wallet cannot act as a player at
            // identity, and only identity drives merges.
            if let identity = stack.ports["identity"]?.rpc, stack.ports["wallet"] != nil {
                let connection = try await stack.directConnection(port: identity, certificate: "wallet")
                defer { connection.close() }
                await expectDenied(
                    "rave.identity.v1.Identity/GetCurrentUser", [], on: connection, as: "wallet",
                    metadata: [MetadataKey.callerUserID: victim.userID, MetadataKey.callerAppID: appID])
            }
            if let wallet = stack.ports["wallet"]?.rpc {
                let connection = try await stack.directConnection(port: wallet, certificate: "gifts")
                defer { connection.close() }
                await expectDenied("rave.merge.v1.MergeParticipant/MergeUsers", [], on: connection, as: "gifts")
            }

            // Through the gateway nothing changed for players: B still sees itself.
            let me = try await victim.identity.getCurrentUser(.init())
            #expect(me.user?.profile?.userId == victim.userID)
        }
    }

    /// PERMISSION_DENIED, whatever the request holds: the role is checked before anything is read.
    private func expectDenied(
        _ method: String, _ request: [UInt8], on connection: RPCConnection, as certificate: String,
        metadata: [String: String] = [:]
    ) async {
        do {
            _ = try await connection.call(
                method: method, request: request, options: CallOptions(metadata: metadata, maxRetries: 0))
            Issue.record("\(certificate) certificate: \(method) succeeded")
        } catch {
            #expect(error.code == .permissionDenied, "\(certificate) certificate: \(method): \(error)")
        }
    }
}
