import Foundation
import RaveMerges
import RaveRPC
import RaveRuntime

/// The push service's entry point: device tokens, notifications, their delivery to APNs and FCM, and the inbox.
package enum PushMain {
    package static func main() async {
        await RaveServiceMain.run(name: "push", migrations: .directory(migrationsDirectory)) { context in
            try services(context: context)
        }
    }

    /// The RPC services, plus the delivery worker registered as a background service.
    static func services(context: ServiceContext) throws -> [any RPCService] {
        let configuration = try PushConfiguration(environment: context.environment)
        context.logger.info(
            "push configuration", configuration.effectiveSettings.map { ($0.0, $0.1) })
        let clock = SystemClock()
        let worker = try configuration.makeWorker(pool: context.pool, clock: clock, logger: context.logger)
        context.addBackgroundService(worker)
        let identity = try context.peerClient(at: configuration.identityAddress, peer: "identity")
        return PushDependencies(
            pool: context.pool, clock: clock, deliveriesQueued: { worker.wake() }, merges: context.mergedUsers(),
            adminScope: AdminScope(identity: identity, setting: "RAVE_PUSH_IDENTITY_ADDRESS"), logger: context.logger
        ).rpcServices
    }

    /// The migrations this service ships (`MigrationSource.shippedDirectory`).
    package static var migrationsDirectory: String { MigrationSource.shippedDirectory(in: .module) }
}
