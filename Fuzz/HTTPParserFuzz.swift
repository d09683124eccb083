// libFuzzer entry point for RaveHTTP's request parser; scripts/fuzz.sh compiles it together with
// Shared/Transport/RaveHTTP/HTTPMessage.swift and HTTPRequestParser.swift (pure Swift) into one module, which is why
// nothing is imported.

/// One fuzz input: byte 0 picks the limits, byte 1 seeds how the rest is cut into reads.
///
/// The rest is fed to a parser in those pieces and, separately, in one piece. Both must agree request for request
/// and fail with the same error; every request must be within the limits; the parser must hold no more than what
/// arrived; and a response echoing a request's headers must have exactly one end of head (no header injection).
@_cdecl("LLVMFuzzerTestOneInput")
public func httpParserFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let input = UnsafeBufferPointer(start: data, count: size)
    let limits = HTTPLimits(
        maxHeadBytes: 64 + Int(input[0] & 0x0F) * 64, maxHeaderCount: 1 + Int(input[0] >> 4),
        maxBodyBytes: Int(input[0] & 0x30) * 4)
    let stream = Array(input[2...])

    let whole = parseAll(stream, limits: limits, pieceSizes: [stream.count])
    let pieces = parseAll(stream, limits: limits, pieceSizes: pieceSizes(seed: input[1], total: stream.count))
    precondition(whole.requests == pieces.requests, "the requests depend on how the bytes were split")
    precondition(whole.error == pieces.error, "the error depends on how the bytes were split")

    for request in whole.requests {
        precondition(request.body.count <= limits.maxBodyBytes, "a body over the limit")
        precondition(request.headers.count <= limits.maxHeaderCount, "more header fields than the limit")
        precondition(request.target.first == "/", "a target that is not a path")
        let echoed = HTTPServerResponse(status: .ok, headers: request.headers).serialized(keepAlive: true)
        precondition(occurrences(of: [13, 10, 13, 10], in: echoed) == 1, "a header value ended the head early")
    }
    return 0
}

/// What a parser made of a byte stream.
private struct Outcome {
    var requests: [HTTPServerRequest] = []
    var error: HTTPParseError?
}

/// Feeds `stream` to a fresh parser in pieces of the given sizes, taking requests out after every piece.
private func parseAll(_ stream: [UInt8], limits: HTTPLimits, pieceSizes: [Int]) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = Outcome()
    var fed = 0
    for pieceSize in pieceSizes {
        parser.append(stream[fed..<fed + pieceSize])
        fed += pieceSize
        do {
            while let request = try parser.nextRequest() { outcome.requests.append(request) }
        } catch {
            outcome.error = error
            return outcome
        }
        precondition(parser.bufferedByteCount <= fed, "the parser holds bytes that never arrived")
    }
    return outcome
}

private func occurrences(of needle: [UInt8], in haystack: [UInt8]) -> Int {
    guard haystack.count >= needle.count else { return 0 }
    return (0...(haystack.count - needle.count)).filter { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
        .count
}
