import RaveTelemetry
import Testing

@testable import RaveRPC

/// Request ids are a per-server prefix and a hex counter, written by hand instead of with `String(_:radix:)`.
@Suite("Request ids")
struct RequestIDTests {
    @Test func idsAreThePrefixAndTheCounterInLowercaseHex() throws {
        let router = RPCRouter(
            services: [], access: .open, configuration: RPCServerConfiguration(),
            logger: Logger(label: "test", level: .error),
            observer: SilentServerObserver())
        let ids = (1...300).map { _ in router.nextRequestID() }
        let prefix = try #require(ids.first?.split(separator: "-").first)
        #expect(prefix.count == 8)
        #expect(prefix.allSatisfy { $0.isHexDigit && !$0.isUppercase })
        for (index, id) in ids.enumerated() {
            #expect(id == "\(prefix)-\(String(index + 1, radix: 16))")
        }
        #expect(Set(ids).count == ids.count)
    }
}
