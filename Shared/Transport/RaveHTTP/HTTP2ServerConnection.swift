import CNGHTTP2
import RaveTransport

/// One HTTP/2 connection (ALPN `h2`), on libnghttp2's server session driven from the channel's loop: bytes read go
/// to `nghttp2_session_mem_recv`, what the session wants to send goes out with `nghttp2_session_mem_send`.
///
/// Each stream becomes an `HTTPServerRequest` for the same `HTTPResponder` as HTTP/1.1; streams are answered
/// concurrently, in any order, at most `HTTPServerSettings.maxConcurrentStreams` at once (the session refuses more).
/// Limits per stream are HTTP/1.1's: header bytes and fields (431), body (413); the bodies of all open streams
/// together are at most `maxBufferedInput` (a stream beyond it is reset with REFUSED_STREAM). A connection with no
/// stream is closed (after GOAWAY) when idle for `idleTimeout`; a stream's request that stops arriving holds one of
/// the connection's streams until the connection closes. All methods run on the channel's loop; the session (a C
/// pointer) never leaves this file.
final class HTTP2ServerConnection: ChannelHandler, HTTPConnectionHandle, @unchecked Sendable {
    // @unchecked: every `var` is used only on the channel's loop; deferred answers hop back with `execute`.

    /// One request stream, from its HEADERS to its close.
    final class Stream {
        var method = ""
        var path = ""
        var authority: String?
        var headers: [HTTPHeader] = []
        var headerBytes = 0
        var body: [UInt8] = []
        /// Body bytes received, counted in the connection's budget until the stream closes.
        var received = 0
        /// Why the request is refused once it is complete (too large).
        var failure: HTTPParseError?
        var task: Task<Void, Never>?
        /// Cancels the answer being produced on the loop (`HTTPAnswer.onLoop`).
        var cancel: (() -> Void)?
        var answered = false
        var responseBody: [UInt8] = []
        var sent = 0

        /// Stops the answer under way, if any (the stream or the connection closed first).
        func stop() {
            task?.cancel()
            task = nil
            let cancel = self.cancel
            self.cancel = nil
            cancel?()
        }
    }

    let channel: Channel
    private let settings: HTTPServerSettings
    private let responder: any HTTPResponder
    private let registry: HTTPConnectionRegistry
    private var session: OpaquePointer?
    private(set) var streams: [Int32: Stream] = [:]
    private var info: HTTPConnectionInfo
    private var closed = false
    private var draining = false
    private var lastActivity: UInt64 = 0
    private var timer: TimerHandle?
    /// Set while nghttp2 runs (and may call back): output is sent once it returned, never from inside a callback.
    private var inSession = false
    /// Request body bytes the connection's open streams hold, at most `settings.maxBufferedInput`.
    private var bufferedBodyBytes = 0

    /// Fields HTTP/2 forbids in a response (RFC 9113 §8.2.2): HTTP/1.1's connection management.
    private static let connectionFields: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade",
    ]

    init(
        channel: Channel, settings: HTTPServerSettings, responder: any HTTPResponder, registry: HTTPConnectionRegistry
    ) {
        self.channel = channel
        self.settings = settings
        self.responder = responder
        self.registry = registry
        info = HTTPConnectionInfo(remoteAddress: channel.remoteAddress)
    }

    // MARK: - ChannelHandler

    func channelActive(_ channel: Channel) {
        info.peerCertificate = channel.peerCertificate
        lastActivity = channel.loop.now()
        if registry.add(self) { draining = true }
        guard startSession() else {
            closed = true
            channel.close()
            return
        }
        if draining { startDraining() }
        sendPending()
        updateTimer()
    }

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        guard let session, !closed else { return }
        lastActivity = channel.loop.now()
        inSession = true
        let result = nghttp2_session_mem_recv(
            session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
        inSession = false
        // A protocol error: the session has queued a GOAWAY naming it; send it, then close.
        sendPending()
        if result < 0 { close() }
        updateTimer()
    }

    func channelWritabilityChanged(_ channel: Channel) {
        if channel.isWritable { sendPending() }
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        closed = true
        cancelTimer()
        let open = streams.values
        streams = [:]
        for stream in open { stream.stop() }
        bufferedBodyBytes = 0
        if let session { nghttp2_session_del(session) }
        session = nil
        registry.remove(self)
    }

    /// Sends GOAWAY (streams under way finish) and closes once no stream is left.
    func startDraining() {
        draining = true
        guard let session, !closed else { return }
        nghttp2_submit_goaway(
            session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
            NGHTTP2_NO_ERROR.rawValue, nil, 0)
        sendPending()
    }

    // MARK: - Session

    private func startSession() -> Bool {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return false }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            HTTP2ServerConnection.from(user).beginHeaders(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, user in
            guard let frame, let name, let value, let user else { return 0 }
            HTTP2ServerConnection.from(user).header(
                streamID: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            guard let data, let user else { return 0 }
            HTTP2ServerConnection.from(user).data(streamID: streamID, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            guard let frame, let user else { return 0 }
            HTTP2ServerConnection.from(user).frameReceived(frame.pointee)
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, user in
            guard let user else { return 0 }
            HTTP2ServerConnection.from(user).streamClosed(streamID)
            return 0
        }
        var created: OpaquePointer?
        guard
            nghttp2_session_server_new(&created, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0,
            let created
        else { return false }
        session = created
        var entries = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: UInt32(settings.maxConcurrentStreams)),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(settings.limits.maxHeadBytes)),
        ]
        return nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count) == 0
    }

    private static func from(_ user: UnsafeMutableRawPointer) -> HTTP2ServerConnection {
        Unmanaged<HTTP2ServerConnection>.fromOpaque(user).takeUnretainedValue()
    }

    /// Writes what the session has to send, as far as the channel takes it, and closes when the session is done.
    private func sendPending() {
        guard let session, !closed, !inSession else { return }
        inSession = true
        defer { inSession = false }
        while channel.isWritable {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count >= 0 else {
                close()
                return
            }
            guard count > 0, let data else { break }
            channel.write(UnsafeRawBufferPointer(start: data, count: count))
        }
        channel.flush()
        // Decided here, never in a callback: a stream's close is reported inside mem_send, before the bytes that
        // end it were written.
        let finished = nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
        if finished || (draining && streams.isEmpty && nghttp2_session_want_write(session) == 0) { close() }
    }

    private func close() {
        guard !closed else { return }
        closed = true
        cancelTimer()
        channel.close()
    }

    // MARK: - Requests

    private func beginHeaders(_ frame: nghttp2_frame) {
        guard Int(frame.hd.type) == Int(NGHTTP2_HEADERS.rawValue),
            frame.headers.cat.rawValue == NGHTTP2_HCAT_REQUEST.rawValue
        else { return }
        streams[frame.hd.stream_id] = Stream()
    }

    private func header(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID], stream.failure == nil else { return }
        // RFC 9113 §6.5.2's accounting: the field's bytes and 32 more.
        stream.headerBytes += name.count + value.count + 32
        guard stream.headerBytes <= settings.limits.maxHeadBytes,
            stream.headers.count < settings.limits.maxHeaderCount
        else {
            stream.failure = HTTPParseError(
                status: .requestHeaderFieldsTooLarge,
                reason: "the request's header fields exceed \(settings.limits.maxHeadBytes) bytes or "
                    + "\(settings.limits.maxHeaderCount) fields")
            return
        }
        let name = String(decoding: name, as: UTF8.self)
        let value = String(decoding: value, as: UTF8.self)
        switch name {
        case ":method": stream.method = value
        case ":path": stream.path = value
        case ":authority": stream.authority = value
        case ":scheme": break
        default: stream.headers.append(HTTPHeader(name: name, value: value))
        }
    }

    private func data(streamID: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        guard let session, let stream = streams[streamID], stream.failure == nil else { return }
        // The connection's streams together hold at most the budget: a stream that would exceed it is refused
        // (REFUSED_STREAM: not processed, the client may send it again), so 100 streams cannot hold 100 bodies.
        guard bufferedBodyBytes + bytes.count <= settings.maxBufferedInput else {
            let refusal = HTTPParseError(
                status: .serviceUnavailable,
                reason: "the connection's streams already hold \(bufferedBodyBytes) bytes of request bodies")
            stream.failure = refusal
            stream.answered = true
            stream.body = []
            nghttp2_submit_rst_stream(
                session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_REFUSED_STREAM.rawValue)
            // The reset is the answer; the responder still hears of the refusal (its metrics count it).
            _ = responder.answer(refusal, from: info)
            return
        }
        bufferedBodyBytes += bytes.count
        stream.received += bytes.count
        guard stream.body.count + bytes.count <= settings.limits.maxBodyBytes else {
            stream.failure = HTTPParseError(
                status: .contentTooLarge, reason: "the request body exceeds \(settings.limits.maxBodyBytes) bytes")
            stream.body = []
            return
        }
        stream.body.append(contentsOf: bytes)
    }

    private func frameReceived(_ frame: nghttp2_frame) {
        let type = Int(frame.hd.type)
        guard type == Int(NGHTTP2_HEADERS.rawValue) || type == Int(NGHTTP2_DATA.rawValue),
            frame.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        else { return }
        requestComplete(frame.hd.stream_id)
    }

    /// The session closed a stream (answered, or reset by the client); whether the connection closes too is decided
    /// after the session's output was written (`sendPending`).
    private func streamClosed(_ streamID: Int32) {
        guard let stream = streams.removeValue(forKey: streamID) else { return }
        stream.stop()
        bufferedBodyBytes -= stream.received
        updateTimer()
    }

    private func requestComplete(_ streamID: Int32) {
        guard let stream = streams[streamID], !stream.answered else { return }
        if let failure = stream.failure {
            respond(streamID, responder.answer(failure, from: info), isHead: false)
            return
        }
        guard !stream.method.isEmpty, stream.path.hasPrefix("/") else {
            respond(
                streamID,
                responder.answer(.badRequest("a request needs :method and a :path starting with /"), from: info),
                isHead: false)
            return
        }
        var headers = stream.headers
        if let authority = stream.authority, !headers.contains(where: { $0.name == "host" }) {
            headers.insert(HTTPHeader(name: "host", value: authority), at: 0)
        }
        let request = HTTPServerRequest(
            method: stream.method, target: stream.path, version: .http2, headers: headers, body: stream.body,
            keepAlive: true)
        stream.body = []
        let isHead = request.method == "HEAD"
        switch responder.answer(request, from: info) {
        case .immediate(let response):
            respond(streamID, response, isHead: isHead)
        case .deferred(let produce):
            startDeferred(produce, stream: stream, streamID: streamID, isHead: isHead)
        case .onLoop(let start, let otherwise):
            let cancel = start(channel.loop) { [self] response in respond(streamID, response, isHead: isHead) }
            if let cancel {
                if !stream.answered { stream.cancel = cancel }
            } else {
                startDeferred(otherwise, stream: stream, streamID: streamID, isHead: isHead)
            }
        }
    }

    private func startDeferred(
        _ produce: @escaping @Sendable () async -> HTTPServerResponse, stream: Stream, streamID: Int32, isHead: Bool
    ) {
        let loop = channel.loop
        stream.task = Task.detached { [self] in
            let response = await produce()
            loop.execute { [self] in respond(streamID, response, isHead: isHead) }
        }
    }

    /// Submits the response of stream `streamID` (if it is still open) and sends what is ready.
    private func respond(_ streamID: Int32, _ response: HTTPServerResponse, isHead: Bool) {
        guard let session, !closed, let stream = streams[streamID], !stream.answered else { return }
        stream.answered = true
        stream.task = nil
        stream.cancel = nil
        stream.responseBody = isHead ? [] : response.body
        var fields = [(":status", String(response.status.code))]
        for header in response.headers {
            let name = header.name.lowercased()
            if !Self.connectionFields.contains(name) && name != "content-length" { fields.append((name, header.value)) }
        }
        if response.status.code != 204 { fields.append(("content-length", String(response.body.count))) }
        Self.withFields(fields) { fields in
            var provider = nghttp2_data_provider(
                source: nghttp2_data_source(ptr: nil),
                read_callback: { _, streamID, buffer, length, flags, _, user in
                    guard let buffer, let flags, let user else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
                    return HTTP2ServerConnection.from(user).readBody(
                        streamID: streamID, into: UnsafeMutableBufferPointer(start: buffer, count: length),
                        flags: flags)
                })
            let result =
                stream.responseBody.isEmpty
                ? nghttp2_submit_response(session, streamID, fields.baseAddress, fields.count, nil)
                : nghttp2_submit_response(session, streamID, fields.baseAddress, fields.count, &provider)
            if result != 0 {
                nghttp2_submit_rst_stream(
                    session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_INTERNAL_ERROR.rawValue)
            }
        }
        sendPending()
    }

    /// The data provider's read: the next bytes of the stream's response body.
    private func readBody(
        streamID: Int32, into buffer: UnsafeMutableBufferPointer<UInt8>, flags: UnsafeMutablePointer<UInt32>
    ) -> Int {
        guard let stream = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(buffer.count, stream.responseBody.count - stream.sent)
        _ = buffer.initialize(from: stream.responseBody[stream.sent..<(stream.sent + count)])
        stream.sent += count
        if stream.sent == stream.responseBody.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    /// Calls `body` with `fields` as nghttp2 name-value pairs (nghttp2 copies them during the call).
    private static func withFields(
        _ fields: [(String, String)], _ body: (UnsafeMutableBufferPointer<nghttp2_nv>) -> Void
    ) {
        var storage: [[UInt8]] = []
        for (name, value) in fields {
            storage.append(Array(name.utf8))
            storage.append(Array(value.utf8))
        }
        let pointers = storage.map { bytes -> UnsafeMutablePointer<UInt8> in
            let pointer = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
            pointer.initialize(from: bytes, count: bytes.count)
            return pointer
        }
        defer { for pointer in pointers { pointer.deallocate() } }
        var pairs = (0..<fields.count).map { index in
            nghttp2_nv(
                name: pointers[2 * index], value: pointers[2 * index + 1], namelen: storage[2 * index].count,
                valuelen: storage[2 * index + 1].count, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
        pairs.withUnsafeMutableBufferPointer { body($0) }
    }

    // MARK: - Idle timer

    /// A connection with no stream and nothing arriving for the idle timeout gets GOAWAY and is closed.
    private func updateTimer() {
        cancelTimer()
        guard !closed, streams.isEmpty else { return }
        timer = channel.loop.scheduleTimer(at: lastActivity &+ settings.idleTimeout.wholeNanoseconds) { [weak self] in
            guard let self, !self.closed else { return }
            self.timer = nil
            if self.streams.isEmpty { self.startDraining() }
        }
    }

    private func cancelTimer() {
        if let timer { channel.loop.cancelTimer(timer) }
        timer = nil
    }
}
