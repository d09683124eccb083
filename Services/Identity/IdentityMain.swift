import Foundation
import RaveRPC
import RaveRuntime

/// The identity service's entry point: accounts, sessions, profiles and the keys that sign access tokens.
@main
enum IdentityMain {
    static func main() async {
        if CommandLine.arguments.dropFirst().first == "bench" {
            exit(await IdentityBenchmarkCommand.run(environment: ProcessInfo.processInfo.environment))
        }
        await RaveServiceMain.run(name: "identity", migrations: .directory(migrationsDirectory)) { context in
            try await services(context: context)
        }
    }

    /// The RPC services, plus the merge delivery worker registered as a background service.
    static func services(context: ServiceContext) async throws -> [any RPCService] {
        let configuration = try IdentityConfiguration(environment: context.environment)
        let service = try await IdentityService.start(pool: context.pool, configuration: configuration)
        context.addBackgroundService(
            try MergeDelivery.forService(context: context, participants: configuration.mergeParticipants))
        return service.rpcServices
    }

    /// The migrations ship as a SwiftPM resource, so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
