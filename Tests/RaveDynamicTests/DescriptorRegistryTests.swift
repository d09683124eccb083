import RaveDynamic
import Testing

@Suite struct DescriptorRegistryTests {
    @Test func methodsResolveToTheirRequestAndResponseTypes() throws {
        let method = try Fixtures.registry.method("rave.identity.v1.Identity/GuestLogin")
        #expect(method.serviceName == "rave.identity.v1.Identity")
        #expect(method.request.fullName == "rave.identity.v1.GuestLoginRequest")
        #expect(method.response.fullName == "rave.identity.v1.LoginResponse")
        #expect(
            try Fixtures.registry.method("/rave.echo.v1.Echo/Echo").response.fullName == "rave.echo.v1.EchoResponse")
        #expect(Fixtures.registry.methods["rave.rpc.v1.Health/Check"] != nil)
    }

    @Test func unknownMethodAndMessageAreErrors() {
        #expect(throws: DynamicError.self) { try Fixtures.registry.method("rave.echo.v1.Echo/Nope") }
        do {
            _ = try Fixtures.registry.message("rave.testing.v1.Missing")
            Issue.record("expected an error")
        } catch {
            #expect(error.kind == .unknownMessage)
        }
    }

    @Test func messageSchemasDescribeFieldsNestedTypesEnumsOneofsAndMaps() throws {
        let container = try Fixtures.schema("rave.testing.v1.Container")
        let items = try #require(container.field(named: "items_by_id"))
        #expect(items.isMap)
        #expect(items.jsonName == "itemsById")
        #expect(container.field(named: "itemsById")?.number == 31)
        #expect(items.typeDescription == "map<int32, rave.testing.v1.Container.Item>")
        let numbers = try #require(container.field(named: "numbers"))
        #expect(numbers.isRepeated && numbers.isPacked && !numbers.isMap)
        let userId = try #require(container.field(named: "user_id"))
        let score = try #require(container.field(named: "score"))
        #expect(userId.oneofGroup != nil && userId.oneofGroup == score.oneofGroup && userId.hasPresence)
        #expect(container.field(named: "color")?.enumType?.name(of: 3) == "COLOR_DEEP_BLUE")
        #expect(container.field(named: "mode")?.enumType?.number(named: "AUTO") == 2)
        #expect(container.field(named: "item")?.messageType === (try Fixtures.schema("rave.testing.v1.Container.Item")))
        #expect(container.field(named: "color")?.hasPresence == false)
    }
}
