import Foundation
import RaveTestSupport
import RaveTransport
import Synchronization

/// One response as a test reads it off the wire.
struct TestHTTPResponse: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object (nil when it is not one).
    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }
}

/// A TLS connection to the front door that sends raw bytes and reads responses one at a time: what pipelining,
/// chunked bodies, a slow head or a malformed request need, which no HTTP client library sends.
final class HTTPTestConnection: ChannelHandler, @unchecked Sendable {
    // @unchecked: `channel` and `applicationProtocol` are set once in `connect`, before the test uses the
    // connection; what the handler shares with the test is in `received`.

    private let received = ReceivedBytes()
    private var channel: Channel?
    /// The ALPN protocol the server selected.
    private(set) var applicationProtocol: String?

    /// Connects over TLS to 127.0.0.1:`port`, trusting the CA in `certificates` and presenting the client
    /// certificate `certificate` (a `<name>.pem` there) when given.
    static func connect(
        port: Int, certificates: String, certificate: String? = nil, applicationProtocols: [String] = ["http/1.1"],
        group: EventLoopGroup
    ) async throws -> HTTPTestConnection {
        var configuration = TLSConfiguration.client(
            trustRootsPath: "\(certificates)/ca.pem",
            certificateChainPath: certificate.map { "\(certificates)/\($0).pem" },
            privateKeyPath: certificate.map { "\(certificates)/\($0)-key.pem" })
        configuration.applicationProtocols = applicationProtocols
        let connection = HTTPTestConnection()
        let channel = try await Connector.connect(
            to: "127.0.0.1", port: port, on: group.next(), tls: try TLSContext(configuration), handler: connection)
        connection.channel = channel
        connection.applicationProtocol = await withCheckedContinuation { continuation in
            channel.loop.execute { continuation.resume(returning: channel.negotiatedApplicationProtocol) }
        }
        return connection
    }

    func send(_ text: String) {
        send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) {
        guard let channel else { return }
        channel.loop.execute {
            channel.write(bytes)
            channel.flush()
        }
    }

    /// Sends one request with `Host`, the headers given and a `Content-Length` body.
    func request(
        _ method: String, _ path: String, headers: [String: String] = [:], body: [UInt8] = []
    ) async throws -> TestHTTPResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        send(Array((head + "\r\n").utf8) + body)
        return try await response(toHead: method == "HEAD")
    }

    /// A POST of JSON text.
    func post(_ path: String, json: String, headers: [String: String] = [:]) async throws -> TestHTTPResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try await request("POST", path, headers: headers, body: Array(json.utf8))
    }

    /// The next complete response; throws when the connection closes first or nothing completes one in 15 s.
    func response(toHead: Bool = false) async throws -> TestHTTPResponse {
        let outcome = try await received.wait { bytes, closed -> Result<TestHTTPResponse, HTTPTestError>? in
            if let response = Self.take(from: &bytes, toHead: toHead) { return .success(response) }
            return closed ? .failure(HTTPTestError("the connection closed before a complete response")) : nil
        }
        return try outcome.get()
    }

    /// Waits until the server closes the connection; returns what arrived that no response took.
    @discardableResult
    func waitForClose() async throws -> [UInt8] {
        try await received.wait { bytes, closed in closed ? bytes : nil }
    }

    func close() {
        guard let channel else { return }
        channel.loop.execute { channel.close() }
    }

    // MARK: - ChannelHandler

    func channelActive(_ channel: Channel) {}

    func channelRead(_ channel: Channel, _ bytes: UnsafeRawBufferPointer) {
        received.append(bytes)
    }

    func channelInactive(_ channel: Channel, error: TransportError?) {
        received.markClosed()
    }

    // MARK: - Parsing

    /// Removes one complete response from the front of `buffer`.
    private static func take(from buffer: inout [UInt8], toHead: Bool) -> TestHTTPResponse? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        guard buffer.count >= 4,
            let end = (0...(buffer.count - 4)).first(where: { Array(buffer[$0..<($0 + 4)]) == terminator })
        else { return nil }
        let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append(
                (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
            )
        }
        let length =
            toHead || status < 200 || status == 204
            ? 0 : Int(headers.first { $0.name.lowercased() == "content-length" }?.value ?? "0") ?? 0
        let bodyStart = end + 4
        guard buffer.count >= bodyStart + length else { return nil }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        return TestHTTPResponse(status: status, headers: headers, body: body)
    }
}

struct HTTPTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
