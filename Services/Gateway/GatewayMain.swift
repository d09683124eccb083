import Foundation
import RaveRuntime

/// The `gateway` executable: the only endpoint game clients reach (docs/gateway.md).
///
/// It starts through the runtime every service uses (`RaveServiceMain`), so signals, the shutdown watchdog,
/// metrics and health are the same: SIGTERM/SIGINT drain gracefully (a second one exits at once), SIGHUP reloads
/// the client-facing certificate.
package enum GatewayMain {
    package static func main() async {
        await RaveServiceMain.run(name: "gateway", options: Gateway.runtimeOptions) { context in
            try Gateway(context: context).serving
        }
    }
}
