import CCurl
import Foundation
import Synchronization

/// One HTTP request.
public struct HTTPRequest: Sendable {
    /// The absolute https:// (or http://) URL.
    public var url: String
    /// Header lines ("authorization: bearer …").
    public var headers: [String]
    public var body: [UInt8]

    /// Creates a request.
    public init(url: String, headers: [String] = [], body: [UInt8] = []) {
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// A server's answer.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]

    /// Creates a response.
    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Why a request got no HTTP answer: the client could not start, the connection or TLS failed, or it timed out.
public struct HTTPClientError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, in words fit for a log line.
    public var message: String

    /// Creates an error.
    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}

/// An HTTP/2 client on libcurl's multi interface: many concurrent streams multiplexed over one TLS connection per
/// host (ALPN h2, falling back to HTTP/1.1 when a server does not speak h2).
///
/// libcurl runs on one dedicated thread that blocks in `curl_multi_poll`; requests reach it through a locked queue
/// and `curl_multi_wakeup`. That thread is not part of Swift's cooperative pool, so its blocking is harmless.
public final class HTTP2Client: Sendable {
    private let engine: CurlEngine

    /// - Parameters:
    ///   - caFile: PEM bundle to trust instead of the system store (tests trust their local server's CA).
    ///   - maximumStreams: concurrent streams per connection.
    public init(
        caFile: String? = nil, maximumStreams: Int = 100, timeout: Duration = .seconds(30)
    ) throws(HTTPClientError) {
        engine = try CurlEngine(caFile: caFile, maximumStreams: maximumStreams, timeout: timeout)
    }

    deinit { engine.stop() }

    /// Sends `request` as a POST; throws when no HTTP answer came (connection, TLS, timeout).
    ///
    /// Any status is an answer.
    public func post(_ request: HTTPRequest) async throws(HTTPClientError) -> HTTPResponse {
        let result = await withCheckedContinuation { continuation in
            engine.submit(request) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }
}

/// The curl thread and its transfers.
// @unchecked: `multi` and `active` are touched only on the curl thread; the queue and flag are behind a Mutex.
private final class CurlEngine: @unchecked Sendable {
    typealias Completion = @Sendable (Result<HTTPResponse, HTTPClientError>) -> Void

    private let multi: UnsafeMutableRawPointer
    private let caFile: String?
    private let timeoutMilliseconds: Int
    private let queue = Mutex<(requests: [(HTTPRequest, Completion)], stopping: Bool)>(([], false))
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    private let stopped = DispatchSemaphore(value: 0)

    init(caFile: String?, maximumStreams: Int, timeout: Duration) throws(HTTPClientError) {
        Self.initializeLibrary
        guard let multi = curl_multi_init() else { throw HTTPClientError("curl_multi_init failed") }
        self.multi = multi
        self.caFile = caFile
        timeoutMilliseconds = Int(timeout.components.seconds * 1000)
        _ = rave_curl_multi_set_long(multi, CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX))
        _ = rave_curl_multi_set_long(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, maximumStreams)
        let thread = Thread { [self] in run() }
        thread.name = "rave-http-curl"
        thread.start()
    }

    /// curl_global_init is not thread-safe; a static let runs it exactly once.
    private static let initializeLibrary: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    func submit(_ request: HTTPRequest, completion: @escaping Completion) {
        let accepted = queue.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.requests.append((request, completion))
            return true
        }
        guard accepted else { return completion(.failure(HTTPClientError("the HTTP client is shut down"))) }
        curl_multi_wakeup(multi)
    }

    func stop() {
        queue.withLock { $0.stopping = true }
        curl_multi_wakeup(multi)
        stopped.wait()
        curl_multi_cleanup(multi)
    }

    private func run() {
        while true {
            let (requests, stopping) = queue.withLock { state in
                defer { state.requests = [] }
                return (state.requests, state.stopping)
            }
            for (request, completion) in requests { start(request, completion: completion) }
            if stopping { break }
            var running: Int32 = 0
            _ = curl_multi_perform(multi, &running)
            finishCompletedTransfers()
            _ = curl_multi_poll(multi, nil, 0, 1000, nil)
        }
        for (handle, transfer) in active {
            curl_multi_remove_handle(multi, handle)
            transfer.finish(.failure(HTTPClientError("the HTTP client shut down mid-request")))
        }
        active = [:]
        stopped.signal()
    }

    private func start(_ request: HTTPRequest, completion: @escaping Completion) {
        guard let easy = curl_easy_init() else {
            return completion(.failure(HTTPClientError("curl_easy_init failed")))
        }
        let transfer = Transfer(easy: easy, completion: completion)
        for line in request.headers { transfer.headerList = curl_slist_append(transfer.headerList, line) }
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = rave_curl_easy_set_string(easy, CURLOPT_URL, request.url)
        _ = rave_curl_easy_set_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_2TLS))
        _ = rave_curl_easy_set_long(easy, CURLOPT_PIPEWAIT, 1)
        _ = rave_curl_easy_set_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = rave_curl_easy_set_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds)
        _ = rave_curl_easy_set_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
        request.body.withUnsafeBufferPointer { body in
            // COPYPOSTFIELDS makes curl own a copy, so the Swift array need not outlive the call.
            _ = rave_curl_easy_set_pointer(
                easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: body.baseAddress))
        }
        _ = rave_curl_easy_set_list(easy, CURLOPT_HTTPHEADER, transfer.headerList)
        if let caFile { _ = rave_curl_easy_set_string(easy, CURLOPT_CAINFO, caFile) }
        _ = rave_curl_easy_set_callback(easy, CURLOPT_WRITEFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            transfer.body.append(contentsOf: UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        }
        _ = rave_curl_easy_set_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = rave_curl_easy_set_callback(easy, CURLOPT_HEADERFUNCTION) { data, size, count, context in
            guard let data, let context else { return 0 }
            let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
            let line = String(decoding: UnsafeRawBufferPointer(start: data, count: size * count), as: UTF8.self)
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                transfer.headers[name] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespacesAndNewlines)
            }
            return size * count
        }
        _ = rave_curl_easy_set_pointer(easy, CURLOPT_HEADERDATA, context)
        active[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    private func finishCompletedTransfers() {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(multi, &remaining) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle,
                let transfer = active.removeValue(forKey: easy)
            else { continue }
            let code = message.pointee.data.result
            curl_multi_remove_handle(multi, easy)
            if code == CURLE_OK {
                var status = 0
                _ = rave_curl_easy_get_long(easy, CURLINFO_RESPONSE_CODE, &status)
                transfer.finish(.success(HTTPResponse(status: status, headers: transfer.headers, body: transfer.body)))
            } else {
                let reason = String(cString: curl_easy_strerror(code))
                transfer.finish(.failure(HTTPClientError("HTTP request failed: \(reason)")))
            }
        }
    }
}

/// One request in flight: curl's handles and the answer being collected.
///
/// Used only on the curl thread.
private final class Transfer {
    let easy: UnsafeMutableRawPointer
    var headerList: UnsafeMutablePointer<curl_slist>?
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    private var completion: CurlEngine.Completion?

    init(easy: UnsafeMutableRawPointer, completion: @escaping CurlEngine.Completion) {
        self.easy = easy
        self.completion = completion
    }

    func finish(_ result: Result<HTTPResponse, HTTPClientError>) {
        completion?(result)
        completion = nil
    }

    deinit {
        curl_easy_cleanup(easy)
        curl_slist_free_all(headerList)
    }
}
