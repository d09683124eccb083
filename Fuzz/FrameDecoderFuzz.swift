// libFuzzer entry point for RaveWire's FrameDecoder; scripts/fuzz.sh compiles it together with
// Shared/Wire/RaveWire/*.swift into one module, which is why nothing is imported.

/// One fuzz input: byte 0 picks the maximum frame size, byte 1 seeds how the rest is cut into reads.
///
/// The rest is fed to a decoder in those pieces and, separately, in one piece. Both must agree frame for frame
/// and fail at the same place with the same kind of error, every frame must re-encode to exactly the bytes it
/// came from, and the decoder must hold no more than what arrived. libFuzzer's `-malloc_limit_mb` catches a
/// buffer sized from a declared length.
@_cdecl("LLVMFuzzerTestOneInput")
public func frameDecoderFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let maxFrameSize = Frame.headerSize + Int(input[0]) * 4
    let stream = Array(input[2...])

    let whole = decodeAll(stream, maxFrameSize: maxFrameSize, pieceSizes: [stream.count])
    let pieces = decodeAll(
        stream, maxFrameSize: maxFrameSize, pieceSizes: pieceSizes(seed: input[1], total: stream.count))
    precondition(whole.frames == pieces.frames, "the frames depend on how the bytes were split")
    precondition(whole.error?.kind == pieces.error?.kind, "the error depends on how the bytes were split")

    var reencoded: [UInt8] = []
    for frame in whole.frames {
        precondition(frame.encoded().count - Frame.lengthPrefixSize <= maxFrameSize, "a frame over the maximum")
        frame.append(to: &reencoded)
    }
    precondition(reencoded == Array(stream.prefix(reencoded.count)), "a frame does not re-encode to its bytes")
    if let error = whole.error {
        checkError(error, at: Array(stream[reencoded.count...]), maxFrameSize: maxFrameSize)
    }
    return 0
}

/// What a decoder made of a byte stream.
private struct Outcome {
    var frames: [Frame] = []
    var error: WireError?
}

/// Feeds `stream` to a fresh decoder in pieces of the given sizes, taking frames out after every piece.
private func decodeAll(_ stream: [UInt8], maxFrameSize: Int, pieceSizes: [Int]) -> Outcome {
    var decoder = FrameDecoder(maxFrameSize: maxFrameSize)
    var outcome = Outcome()
    var fed = 0
    var consumed = 0
    for pieceSize in pieceSizes {
        decoder.append(Array(stream[fed..<fed + pieceSize]))
        fed += pieceSize
        do {
            while let frame = try decoder.nextFrame() {
                consumed += frame.encoded().count
                outcome.frames.append(frame)
            }
        } catch {
            outcome.error = error
            return outcome
        }
        precondition(decoder.bufferedByteCount == fed - consumed, "the decoder holds bytes that never arrived")
    }
    return outcome
}

/// Checks that the error names what is actually wrong with the first undecoded frame.
private func checkError(_ error: WireError, at rest: [UInt8], maxFrameSize: Int) {
    precondition(rest.count >= Frame.lengthPrefixSize, "an error before a whole length prefix arrived")
    let length = rest[0..<4].reduce(0) { $0 << 8 | Int($1) }
    switch error.kind {
    case .frameTooLarge:
        precondition(length > maxFrameSize, "frame too large, but the length \(length) is allowed")
    case .frameTooShort:
        precondition(length < Frame.headerSize, "frame too short, but the length \(length) is allowed")
    case .unknownFrameType:
        precondition(rest.count > 4 && FrameType(rawValue: rest[4]) == nil, "unknown type, but the type is known")
    default:
        preconditionFailure("the decoder threw \(error.kind), which only validation may throw")
    }
}
