import RaveCrypto
import Testing

@testable import RaveWire

@Suite("Frame decoder")
struct FrameDecoderTests {
    /// A mix of frame types and body sizes, including empty bodies and a body of exactly the ping limit.
    static let sampleFrames: [Frame] = [
        Frame(type: .handshake, streamID: 0, body: [0x08, 0x01]),
        Frame(type: .request, streamID: 1, body: Array(repeating: 0xAB, count: 300)),
        Frame(type: .cancel, streamID: 1),
        Frame(type: .ping, streamID: 0, body: Array(0..<64)),
        Frame(type: .pong, streamID: 0),
        Frame(type: .response, flags: 0x80, streamID: 0xFFFF_FFFF, body: [1, 2, 3]),
        Frame(type: .goAway, streamID: 0, body: [0x08, 0x07]),
        Frame(type: .error, streamID: 0, body: Array(repeating: 0, count: 70_000)),
    ]

    static var sampleBytes: [UInt8] { sampleFrames.flatMap { $0.encoded() } }

    private func drain(_ decoder: inout FrameDecoder) throws -> [Frame] {
        var frames: [Frame] = []
        while let frame = try decoder.nextFrame() { frames.append(frame) }
        return frames
    }

    @Test func encodesHeaderFieldsBigEndian() {
        let bytes = Frame(type: .request, flags: 0, streamID: 0x0102_0304, body: [0xAA, 0xBB]).encoded()
        #expect(bytes == [0, 0, 0, 8, 2, 0, 1, 2, 3, 4, 0xAA, 0xBB])
    }

    @Test func appendsTheHeaderAfterWhatTheBufferHolds() {
        var buffer: [UInt8] = [0xEE]
        Frame.appendHeader(type: .goAway, flags: 0x81, streamID: 0x0102_0304, bodyCount: 0x00AB_CDEF, to: &buffer)
        #expect(buffer == [0xEE, 0x00, 0xAB, 0xCD, 0xF5, 0x07, 0x81, 0x01, 0x02, 0x03, 0x04])
        Frame.appendHeader(type: .request, streamID: 0xFFFF_FFFF, bodyCount: 0, to: &buffer)
        #expect(buffer.suffix(10) == [0x00, 0x00, 0x00, 0x06, 0x02, 0x00, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    @Test func decodesFramesFedOneByteAtATime() throws {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        for byte in Self.sampleBytes {
            decoder.append([byte])
            frames += try drain(&decoder)
        }
        #expect(frames == Self.sampleFrames)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test(arguments: [1, 2, 3, 42])
    func decodesFramesFedInRandomSplits(seed: UInt64) throws {
        var generator = SplitMix64(seed: seed)
        let bytes = Self.sampleBytes
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        var offset = 0
        while offset < bytes.count {
            let size = min(bytes.count - offset, Int(generator.next() % 9000) + 1)
            decoder.append(Array(bytes[offset..<offset + size]))
            frames += try drain(&decoder)
            offset += size
        }
        #expect(frames == Self.sampleFrames)
    }

    @Test func decodesManyFramesFromOneBuffer() throws {
        let frames = (1...1000).map {
            Frame(type: .request, streamID: UInt32($0), body: [UInt8(truncatingIfNeeded: $0)])
        }
        var decoder = FrameDecoder()
        decoder.append(frames.flatMap { $0.encoded() })
        #expect(try drain(&decoder) == frames)
    }

    @Test func waitsForTheRestOfATruncatedFrame() throws {
        var decoder = FrameDecoder()
        let bytes = Frame(type: .request, streamID: 9, body: [1, 2, 3, 4]).encoded()
        decoder.append(Array(bytes.dropLast()))
        #expect(try decoder.nextFrame() == nil)
        #expect(decoder.bufferedByteCount == bytes.count - 1)
    }

    @Test(arguments: [0, 1, 5])
    func rejectsLengthBelowHeaderSize(length: UInt8) {
        var decoder = FrameDecoder()
        decoder.append([0, 0, 0, length])
        #expect { try decoder.nextFrame() } throws: { ($0 as? WireError)?.kind == .frameTooShort }
    }

    @Test func rejectsOverLimitLengthBeforeAnyBodyArrives() {
        var decoder = FrameDecoder()
        // 4 GiB declared: the decoder must refuse from the prefix alone, holding only the 4 bytes it was given.
        decoder.append([0xFF, 0xFF, 0xFF, 0xFF])
        #expect { try decoder.nextFrame() } throws: { ($0 as? WireError)?.kind == .frameTooLarge }
        #expect(decoder.bufferedByteCount == 4)
    }

    @Test func honoursAConfiguredMaximum() throws {
        var decoder = FrameDecoder(maxFrameSize: 16)
        decoder.append(Frame(type: .request, streamID: 1, body: Array(repeating: 0, count: 10)).encoded())
        #expect(try decoder.nextFrame() != nil)
        decoder.append(Frame(type: .request, streamID: 1, body: Array(repeating: 0, count: 11)).encoded())
        #expect { try decoder.nextFrame() } throws: { ($0 as? WireError)?.kind == .frameTooLarge }
    }

    @Test func rejectsUnknownFrameTypeFromItsFirstByte() {
        var decoder = FrameDecoder()
        decoder.append([0, 0, 0, 6, 99])
        #expect { try decoder.nextFrame() } throws: { ($0 as? WireError)?.kind == .unknownFrameType }
    }

    // MARK: - Admission

    @Test func refusedFrameIsSkippedWithoutBufferingItsBody() throws {
        var decoder = FrameDecoder(admissionThreshold: 100)
        let large = Frame(type: .request, streamID: 7, body: Array(repeating: 0xCD, count: 100_000)).encoded()
        let small = Frame(type: .request, streamID: 8, body: [1, 2, 3])
        var asked: [FrameHeader] = []
        var results: [FrameDecoder.Decoded] = []
        var largestBuffer = 0
        // The large frame arrives in 1000-byte pieces, then the small one right behind it.
        for piece in stride(from: 0, to: large.count, by: 1000).map({ large[$0..<min($0 + 1000, large.count)] }) {
            decoder.append(Array(piece))
            while let next = try decoder.next(admitting: {
                asked.append($0); return false
            }) { results.append(next) }
            largestBuffer = max(largestBuffer, decoder.bufferedByteCount)
        }
        #expect(decoder.hasPartialFrame == false)
        decoder.append(small.encoded())
        while let next = try decoder.next(admitting: {
            asked.append($0); return false
        }) { results.append(next) }

        let header = FrameHeader(length: 100_006, type: .request, flags: 0, streamID: 7)
        #expect(asked == [header])
        #expect(results == [.refused(header), .frame(small)])
        #expect(largestBuffer < 1000)
    }

    @Test func admittedFrameIsAskedAboutOnceAndDecoded() throws {
        var decoder = FrameDecoder(admissionThreshold: 100)
        let large = Frame(type: .request, streamID: 3, body: Array(repeating: 0x11, count: 5000))
        let small = Frame(type: .ping, streamID: 0, body: [9])
        var asked = 0
        var results: [FrameDecoder.Decoded] = []
        for byte in large.encoded() + small.encoded() {
            decoder.append([byte])
            while let next = try decoder.next(admitting: { _ in
                asked += 1; return true
            }) { results.append(next) }
        }
        #expect(asked == 1)
        #expect(results == [.frame(large), .frame(small)])
    }

    @Test func bufferOfALargeFrameIsReleasedOnceItIsDecoded() throws {
        var decoder = FrameDecoder()
        decoder.append(Frame(type: .request, streamID: 1, body: Array(repeating: 0, count: 1 << 20)).encoded())
        #expect(try decoder.nextFrame() != nil)
        #expect(decoder.bufferCapacity <= FrameDecoder.retainedCapacity)
    }
}

/// `nextHeader(admitting:)` and `withBody`: the body read in place, until the decoder is used again.
@Suite("Frame decoder, bodies in place")
struct FrameDecoderInPlaceTests {
    /// Every sample frame, fed in chunks of every size up to 7 bytes, comes out with its header and body intact.
    @Test(arguments: [1, 2, 3, 7])
    func framesDecodeInPlaceAcrossChunks(chunk: Int) throws {
        var decoder = FrameDecoder()
        var frames: [Frame] = []
        let bytes = FrameDecoderTests.sampleBytes
        for start in stride(from: 0, to: bytes.count, by: chunk) {
            decoder.append(Array(bytes[start..<min(start + chunk, bytes.count)]))
            while case .frame(let header)? = try decoder.nextHeader(admitting: { _ in true }) {
                #expect(header.wireSize == Frame.lengthPrefixSize + Frame.headerSize + decoder.withBody { $0.count })
                frames.append(
                    Frame(
                        type: header.type, flags: header.flags, streamID: header.streamID,
                        body: decoder.withBody { Array($0) }))
            }
        }
        #expect(frames == FrameDecoderTests.sampleFrames)
        #expect(decoder.bufferedByteCount == 0 && !decoder.hasPartialFrame)
    }

    /// The frame just returned is not counted as buffered input (it is being handled), and is dropped on the next
    /// use of the decoder: the memory a large one took is given back once the buffer is empty.
    @Test func theCurrentFrameIsNotBufferedInputAndGoesOnNextUse() throws {
        var decoder = FrameDecoder()
        let large = Frame(type: .request, streamID: 1, body: Array(repeating: 7, count: 1 << 20))
        let small = Frame(type: .request, streamID: 3, body: [1, 2])
        decoder.append(large.encoded() + small.encoded().prefix(5))
        #expect(
            try decoder.nextHeader(admitting: { _ in true })
                == .frame(
                    FrameHeader(
                        length: Frame.headerSize + (1 << 20), type: .request, flags: 0, streamID: 1)))
        #expect(decoder.bufferedByteCount == 5 && decoder.hasPartialFrame)
        #expect(decoder.withBody { $0.count == 1 << 20 && $0.allSatisfy { $0 == 7 } })
        #expect(try decoder.nextHeader(admitting: { _ in true }) == nil)
        #expect(decoder.withBody { $0.isEmpty })
        decoder.append(Array(small.encoded().dropFirst(5)))
        #expect(try decoder.nextHeader(admitting: { _ in true }) != nil)
        #expect(decoder.withBody { Array($0) } == [1, 2])
        #expect(try decoder.nextHeader(admitting: { _ in true }) == nil)
        #expect(decoder.bufferedByteCount == 0 && !decoder.hasPartialFrame)
        #expect(decoder.bufferCapacity <= FrameDecoder.retainedCapacity)
    }

    @Test func refusedFramesAndErrorsAreAsWithCopiedBodies() throws {
        var decoder = FrameDecoder(admissionThreshold: 100)
        let large = Frame(type: .request, streamID: 5, body: Array(repeating: 1, count: 200))
        decoder.append(large.encoded())
        guard case .refused(let header)? = try decoder.nextHeader(admitting: { _ in false }) else {
            Issue.record("the large frame was not refused")
            return
        }
        #expect(header.streamID == 5 && decoder.bufferedByteCount == 0)
        decoder.append([0, 0, 0, 1])
        #expect(throws: WireError.self) { try decoder.nextHeader(admitting: { _ in true }) }
    }
}
