import RaveEvents
import RaveRuntime
import Testing

@Suite("RAVE_EVENT_SINKS")
struct EventSinksConfigurationTests {
    @Test func parsesNamedAddressesInOrder() throws {
        let sinks = try EventSinkAddress.parseList("push=127.0.0.1:7506, gifts=gifts.internal:7507")
        #expect(
            sinks == [
                EventSinkAddress(name: "push", host: "127.0.0.1", port: 7506),
                EventSinkAddress(name: "gifts", host: "gifts.internal", port: 7507),
            ])
    }

    @Test func acceptsIPv6AndSkipsEmptyEntries() throws {
        let sinks = try EventSinkAddress.parseList("push=[::1]:7506,,")
        #expect(sinks == [EventSinkAddress(name: "push", host: "::1", port: 7506)])
    }

    @Test func emptyMeansNoSinks() throws {
        #expect(try EventSinkAddress.parseList("").isEmpty)
        #expect(try EventSinkAddress.parseList("  ").isEmpty)
    }

    @Test(arguments: [
        "push", "push=", "=127.0.0.1:7506", "push=127.0.0.1", "push=127.0.0.1:0", "push=127.0.0.1:70000",
        "push=127.0.0.1:port", "pu sh=127.0.0.1:7506", "push=127.0.0.1:7506,gifts",
    ])
    func rejectsMalformedEntriesNamingTheVariable(text: String) {
        #expect {
            _ = try EventSinkAddress.parseList(text)
        } throws: { error in
            guard let error = error as? RuntimeError else { return false }
            return error.kind == .invalidConfiguration && error.message.hasPrefix("RAVE_EVENT_SINKS must be")
        }
    }

    @Test func rejectsADuplicateName() {
        #expect {
            _ = try EventSinkAddress.parseList("push=127.0.0.1:1,push=127.0.0.1:2")
        } throws: { error in
            (error as? RuntimeError)?.message == "RAVE_EVENT_SINKS names the sink \"push\" twice"
        }
    }
}
