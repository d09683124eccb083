import Foundation
import RaveRPC
import RaveRuntime

/// The push service's entry point: device tokens, notifications, their delivery to APNs and FCM, and the inbox.
@main
enum PushMain {
    static func main() async {
        await RaveServiceMain.run(name: "push", migrations: .directory(migrationsDirectory)) { context in
            try services(context: context)
        }
    }

    static func services(context: ServiceContext) throws -> [any RPCService] {
        PushDependencies(pool: context.pool).services()
    }

    /// The migrations ship as a SwiftPM resource, so an installed binary finds them next to itself.
    static var migrationsDirectory: String {
        (Bundle.module.resourceURL ?? URL(fileURLWithPath: ".")).appendingPathComponent("Migrations").path
    }
}
