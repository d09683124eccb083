import Testing

@testable import RaveWire

@Suite("Frame validation")
struct FrameValidationTests {
    @Test func acceptsWellFormedFrames() throws {
        try Frame(type: .request, streamID: 1, body: [1]).validate()
        try Frame(type: .ping, streamID: 0, body: Array(repeating: 0, count: 64)).validate()
        try Frame(type: .cancel, streamID: 5).validate()
        try Frame(type: .handshake, streamID: 0, body: [8, 1]).validate()
    }

    @Test(arguments: [FrameType.request, .response, .cancel])
    func rejectsCallFramesOnStreamZero(type: FrameType) {
        #expect { try Frame(type: type, streamID: 0).validate() } throws: {
            ($0 as? WireError)?.kind == .invalidStreamID
        }
    }

    @Test(arguments: [FrameType.handshake, .ping, .pong, .goAway, .error])
    func rejectsConnectionFramesOnAStream(type: FrameType) {
        #expect { try Frame(type: type, streamID: 3).validate() } throws: {
            ($0 as? WireError)?.kind == .invalidStreamID
        }
    }

    @Test func rejectsOversizedPingAndCancelWithBody() {
        #expect { try Frame(type: .ping, streamID: 0, body: Array(repeating: 0, count: 65)).validate() } throws: {
            ($0 as? WireError)?.kind == .invalidBody
        }
        #expect { try Frame(type: .cancel, streamID: 1, body: [0]).validate() } throws: {
            ($0 as? WireError)?.kind == .invalidBody
        }
    }
}
