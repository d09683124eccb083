import RaveDynamic
import RaveMessages
import Testing

@Suite struct JSONTranscoderTests {
    let transcoder = JSONTranscoder()

    @Test func writesCanonicalJSONWith64BitStringsEnumNamesAndBase64() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Scalars")
        let message = try DynamicMessage(schema: schema, protobufBytes: Fixtures.scalars.protobufBytes())
        let json = transcoder.json(from: message)
        #expect(json.contains(#""int64Value":"-9223372036854775808""#))
        #expect(json.contains(#""uint64Value":"18446744073709551615""#))
        #expect(json.contains(#""int32Value":-42"#))
        #expect(json.contains(#""doubleValue":2.5"#))
        #expect(json.contains(#""bytesValue":"AAEC+v8=""#))
        #expect(json.contains(#""stringValue":"héllo \"world\"\n""#))
        #expect(json.contains(#""boolValue":true"#))
        let container = try DynamicMessage(
            schema: Fixtures.schema("rave.testing.v1.Container"), protobufBytes: Fixtures.container.protobufBytes())
        let text = transcoder.json(from: container)
        #expect(text.contains(#""colors":["COLOR_RED","COLOR_DEEP_BLUE"]"#))
        #expect(text.contains(#""mode":"AUTO""#))
        #expect(text.contains(#""score":"0""#))
        #expect(text.contains(#""itemsById":{"7":{"name":"seven","count":"7","color":"COLOR_RED"}}"#))
        #expect(text.contains(#""labels":{"1":"one","18446744073709551615":"max"}"#))
    }

    @Test func everyFieldKindRoundTripsThroughJSON() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        let original = try DynamicMessage(schema: schema, protobufBytes: Fixtures.container.protobufBytes())
        for pretty in [false, true] {
            let parsed = try transcoder.message(
                fromJSON: transcoder.json(from: original, pretty: pretty), schema: schema)
            #expect(try TestingV1.Container(protobufBytes: parsed.protobufBytes()) == Fixtures.container)
        }
    }

    @Test func readsOriginalNamesNumbersForEnumsAndNumbersFor64BitFields() throws {
        let json = #"""
            {"user_id": "u-1", "color": 3, "mode": "ON", "items": [{"count": 12, "color": "COLOR_GREEN"}],
             "deltas": ["-7", 8], "big_numbers": ["18446744073709551615"], "counters": {"a": "1", "b": 2},
             "itemsById": {"-3": {"name": "neg"}}, "blobs": ["AQI", "_-8="], "ratios": [1, "NaN", "-Infinity"],
             "flags": [true, false], "status": "NOT_FOUND", "default": null, "class": 1.0}
            """#
        let message = try transcoder.message(fromJSON: json, schema: Fixtures.schema("rave.testing.v1.Container"))
        let decoded = try TestingV1.Container(protobufBytes: message.protobufBytes())
        #expect(decoded.target == .userId("u-1"))
        #expect(decoded.color == .deepBlue)
        #expect(decoded.mode == .on)
        #expect(decoded.items == [TestingV1.Container.Item(name: "", count: 12, color: .green)])
        #expect(decoded.deltas == [-7, 8])
        #expect(decoded.bigNumbers == [UInt64.max])
        #expect(decoded.counters == ["a": 1, "b": 2])
        #expect(decoded.itemsById == [-3: TestingV1.Container.Item(name: "neg")])
        #expect(decoded.blobs == [[1, 2], [0xFF, 0xEF]])
        #expect(decoded.ratios.count == 3 && decoded.ratios[1].isNaN && decoded.ratios[2] == -.infinity)
        #expect(decoded.flags == [true, false])
        #expect(decoded.status == .notFound)
        #expect(decoded.class == 1)
    }

    @Test func transcodesRequestsAndResponsesByMethodName() throws {
        let bytes = try transcoder.requestBytes(
            method: "rave.identity.v1.Identity/GuestLogin",
            json: #"{"appId": "app-1", "device": {"deviceId": "d-1", "platform": "ios"}}"#)
        let request = try IdentityV1.GuestLoginRequest(protobufBytes: bytes)
        #expect(request.appId == "app-1")
        #expect(request.device?.deviceId == "d-1")
        #expect(try transcoder.requestBytes(method: "rave.identity.v1.Identity/Logout", json: " ") == [])
        let response = EchoV1.EchoResponse(payload: [104, 105])
        let json = try transcoder.responseJSON(
            method: "rave.echo.v1.Echo/Echo", protobufBytes: response.protobufBytes())
        #expect(json == #"{"payload":"aGk="}"#)
        #expect(try transcoder.responseJSON(method: "rave.echo.v1.Echo/Echo", protobufBytes: [], pretty: true) == "{}")
    }

    @Test func badJSONIsRejectedNamingTheField() throws {
        let schema = try Fixtures.schema("rave.testing.v1.Container")
        func failure(_ json: String) -> DynamicError? {
            do {
                _ = try transcoder.message(fromJSON: json, schema: schema)
                return nil
            } catch {
                return error
            }
        }
        let unknown = failure(#"{"item": {"nmae": "x"}}"#)
        #expect(unknown?.kind == .unknownField)
        #expect(unknown?.message.contains("item.nmae") == true)
        #expect(failure(#"{"class": 2147483648}"#)?.message.contains("class") == true)
        #expect(failure(#"{"class": 1.5}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"class": "one"}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"internal": 1}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"default": 1}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"color": "PURPLE"}"#)?.message.contains("COLOR_RED") == true)
        #expect(failure(#"{"numbers": 1}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"user_id": "a", "score": "1"}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"blobs": ["***"]}"#)?.kind == .invalidJSON)
        #expect(failure(#"{"itemsById": {"x": {}}}"#)?.kind == .invalidJSON)
        #expect(failure(#"[1]"#)?.kind == .invalidJSON)
        #expect(failure(#"{"#)?.kind == .invalidJSON)
        #expect(throws: DynamicError.self) { try transcoder.requestBytes(method: "rave.echo.v1.Echo/Nope", json: "{}") }
    }
}
