import Glibc
import RaveMessages
import RaveWire

/// The call envelopes (`rave.rpc.v1.Request`, `rave.rpc.v1.Response`) encoded and decoded by hand.
///
/// Every call crosses these twice per hop, and the gateway adds a hop, so the general protobuf path (a C struct
/// per field, an arena, sorted maps) was a large share of a proxied call's CPU. The bytes are the same protobuf
/// wire format: any peer that uses the generated messages reads them, and unknown fields are skipped.
enum EnvelopeCodec {
    // MARK: - Request

    /// Appends a REQUEST frame for `streamID` to `output`, header and envelope, without an intermediate array.
    ///
    /// `metadata` entries are written first, then the already encoded entries of `encodedMetadata`; a key in
    /// both is read as the later one (protobuf map semantics), so the encoded entries win.
    static func appendRequest(
        streamID: UInt32, method: String, timeoutMs: UInt32, metadata: [String: String],
        encodedMetadata: EncodedMetadata, payload: [UInt8], to output: inout [UInt8]
    ) {
        var bodyCount = stringFieldSize(method) + (timeoutMs == 0 ? 0 : 1 + ProtoWire.varintSize(UInt64(timeoutMs)))
        for (key, value) in metadata {
            let entry = EncodedMetadata.entrySize(keyCount: key.utf8.count, valueCount: value.utf8.count)
            bodyCount += 1 + ProtoWire.varintSize(UInt64(entry)) + entry
        }
        bodyCount += encodedMetadata.bytes.count
        bodyCount += bytesFieldSize(payload.count)
        Frame.appendHeader(type: .request, streamID: streamID, bodyCount: bodyCount, to: &output)
        ProtoWire.appendString(method, field: 1, to: &output)
        if timeoutMs != 0 { ProtoWire.appendVarintField(UInt64(timeoutMs), field: 2, to: &output) }
        for (key, value) in metadata { EncodedMetadata.appendEntry(key: key, value: value, to: &output) }
        output.append(contentsOf: encodedMetadata.bytes)
        ProtoWire.appendBytes(payload, field: 4, to: &output)
    }

    /// A decoded REQUEST envelope.
    struct Request {
        var method = ""
        var timeoutMs: UInt32 = 0
        var metadata: [String: String] = [:]
        /// The metadata entries as they arrived, for proxies that pass them on.
        var encodedMetadata = EncodedMetadata()
        var payload: [UInt8] = []
    }

    /// Where the fields of a REQUEST body are, found in place: nothing is copied but metadata entries that other
    /// fields split (protobuf allows it; our encoders write them together).
    struct RequestFields {
        /// The method's UTF-8, checked to be text.
        var method: Range<Int>
        var timeoutMs: UInt32 = 0
        /// The metadata entries, each a whole field 3, when they are contiguous (nil: none, or scattered).
        var metadata: Range<Int>?
        /// The metadata entries gathered, when other fields came between them.
        var scatteredMetadata: [UInt8]?
        var payload: Range<Int>

        /// Whether the request carries metadata.
        var hasMetadata: Bool { metadata != nil || scatteredMetadata != nil }
    }

    /// Finds the fields of a REQUEST body, checking every tag and length and the method's text.
    ///
    /// The metadata entries are checked when decoded (`metadata(of:in:)`, `scanMetadata`). Later occurrences of a field
    /// win, as in protobuf; unknown fields are skipped.
    static func scanRequest<Bytes: RandomAccessCollection<UInt8>>(
        _ body: Bytes
    ) throws(EnvelopeError) -> RequestFields where Bytes.Index == Int {
        var reader = ProtoWire.Reader(slice: body)
        let empty = body.startIndex..<body.startIndex
        var fields = RequestFields(method: empty, payload: empty)
        var metadataStart = -1
        var metadataEnd = -1
        var scattered: [UInt8]?
        while let (field, wireType, fieldStart) = try reader.nextTag() {
            switch (field, wireType) {
            case (1, .lengthDelimited):
                fields.method = try reader.readLengthDelimitedRange()
                try reader.checkText(in: fields.method, field: "method")
            case (2, .varint):
                fields.timeoutMs = UInt32(truncatingIfNeeded: try reader.readVarint())
            case (3, .lengthDelimited):
                let entry = try reader.readLengthDelimitedRange()
                if metadataStart < 0 {
                    metadataStart = fieldStart
                } else if metadataEnd != fieldStart, scattered == nil {
                    scattered = Array(body[metadataStart..<metadataEnd])
                }
                scattered?.append(contentsOf: body[fieldStart..<entry.upperBound])
                metadataEnd = entry.upperBound
            case (4, .lengthDelimited):
                fields.payload = try reader.readLengthDelimitedRange()
            default:
                try reader.skip(wireType)
            }
        }
        if let scattered {
            fields.scatteredMetadata = scattered
        } else if metadataStart >= 0 {
            fields.metadata = metadataStart..<metadataEnd
        }
        return fields
    }

    /// The decoded metadata of a scanned request, and its entries as `EncodedMetadata`.
    static func metadata(
        of fields: RequestFields, in body: UnsafeRawBufferPointer
    ) throws(EnvelopeError) -> (dictionary: [String: String], encoded: EncodedMetadata) {
        let entries: [UInt8]
        if let range = fields.metadata {
            entries = Array(UnsafeRawBufferPointer(rebasing: body[range]))
        } else if let scattered = fields.scatteredMetadata {
            entries = scattered
        } else {
            return ([:], EncodedMetadata())
        }
        return (try decodeMetadata(entries[...]), EncodedMetadata(validatedBytes: entries[...]))
    }

    /// Checks encoded metadata entries (each a whole field 3) as decoding them into a dictionary would, with the
    /// same error for the same fault, and reads the caller's entries; no other key or value becomes a string.
    ///
    /// A later entry wins, as in protobuf maps; within an entry, a later key or value field wins.
    static func scanMetadata(_ entries: UnsafeRawBufferPointer) throws(EnvelopeError) -> CallerMetadata {
        var summary = CallerMetadata()
        var outer = ProtoWire.Reader(slice: entries)
        while try outer.nextTag() != nil {
            let entryRange = try outer.readLengthDelimitedRange()
            var reader = ProtoWire.Reader(slice: UnsafeRawBufferPointer(rebasing: entries[entryRange]))
            var key = 0..<0
            var value = 0..<0
            while let (field, wireType, _) = try reader.nextTag() {
                switch (field, wireType) {
                case (1, .lengthDelimited):
                    key = try reader.readLengthDelimitedRange()
                    try reader.checkText(in: key, field: "metadata key")
                case (2, .lengthDelimited):
                    value = try reader.readLengthDelimitedRange()
                    try reader.checkText(in: value, field: "metadata value")
                default: try reader.skip(wireType)
                }
            }
            let keyBytes = UnsafeRawBufferPointer(rebasing: reader.bytes[key])
            guard let assertion = callerAssertionKeys.firstIndex(where: { Self.sameBytes($0, keyBytes) }) else {
                continue
            }
            summary.assertsCaller = true
            guard assertion < 4 else { continue }
            let text = try reader.string(in: value, field: "metadata value")
            switch assertion {
            case 0: summary.userID = text
            case 1: summary.appID = text
            case 2: summary.sessionID = text
            default: summary.scopes = text
            }
        }
        return summary
    }

    /// The UTF-8 of `MetadataKey.callerAssertions`, the caller's user, app, session and scopes first.
    private static let callerAssertionKeys: [[UInt8]] = {
        let first = [
            MetadataKey.callerUserID, MetadataKey.callerAppID, MetadataKey.callerSessionID, MetadataKey.callerScopes,
        ]
        return (first + MetadataKey.callerAssertions.filter { !first.contains($0) }).map { Array($0.utf8) }
    }()

    /// Whether `bytes` holds exactly `other`'s bytes.
    static func sameBytes(_ bytes: [UInt8], _ other: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == other.count else { return false }
        return bytes.withUnsafeBytes { sameBytes($0, other) }
    }

    /// Whether `bytes` holds exactly `other`'s bytes.
    static func sameBytes(_ bytes: UnsafeRawBufferPointer, _ other: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == other.count else { return false }
        guard let start = bytes.baseAddress, let otherStart = other.baseAddress else { return true }
        return memcmp(start, otherStart, other.count) == 0
    }

    /// Decodes a REQUEST body; the message says what is wrong.
    ///
    /// A server reads requests in place instead (`scanRequest`, `scanMetadata`); this decodes one whole, for
    /// tests and tools.
    static func decodeRequest(_ body: [UInt8]) -> Result<Request, EnvelopeError> {
        body.withUnsafeBytes { body in
            do throws(EnvelopeError) {
                let fields = try scanRequest(body)
                var request = Request()
                request.method = String(decoding: body[fields.method], as: UTF8.self)
                request.timeoutMs = fields.timeoutMs
                (request.metadata, request.encodedMetadata) = try metadata(of: fields, in: body)
                request.payload = Array(body[fields.payload])
                return .success(request)
            } catch {
                return .failure(error)
            }
        }
    }

    /// The dictionary of encoded metadata entries (each a whole field 3); a later entry wins, as in protobuf maps.
    private static func decodeMetadata(_ entries: ArraySlice<UInt8>) throws(EnvelopeError) -> [String: String] {
        var metadata: [String: String] = [:]
        var reader = ProtoWire.Reader(slice: entries)
        while try reader.nextTag() != nil {
            let (key, value) = try EncodedMetadata.decodeEntry(entries[try reader.readLengthDelimitedRange()])
            metadata[key] = value
        }
        return metadata
    }

    // MARK: - Response

    /// Appends a RESPONSE frame for `streamID` to `output`.
    static func appendResponse(
        streamID: UInt32, code: StatusCode, message: String, details: [UInt8], notProcessed: Bool,
        payload: [UInt8], to output: inout [UInt8]
    ) {
        let codeValue = UInt64(bitPattern: Int64(code.rawValue))
        let bodyCount = responseBodySize(
            code: code, message: message, details: details, notProcessed: notProcessed, payload: payload)
        Frame.appendHeader(type: .response, streamID: streamID, bodyCount: bodyCount, to: &output)
        if codeValue != 0 { ProtoWire.appendVarintField(codeValue, field: 1, to: &output) }
        ProtoWire.appendString(message, field: 2, to: &output)
        ProtoWire.appendBytes(details, field: 3, to: &output)
        if notProcessed { ProtoWire.appendVarintField(1, field: 4, to: &output) }
        ProtoWire.appendBytes(payload, field: 5, to: &output)
    }

    /// The wire size of a RESPONSE frame's body, to check it against the peer's frame limit before encoding.
    static func responseBodySize(
        code: StatusCode, message: String, details: [UInt8], notProcessed: Bool, payload: [UInt8]
    ) -> Int {
        let codeValue = UInt64(bitPattern: Int64(code.rawValue))
        return (codeValue == 0 ? 0 : 1 + ProtoWire.varintSize(codeValue)) + stringFieldSize(message)
            + bytesFieldSize(details.count) + (notProcessed ? 2 : 0) + bytesFieldSize(payload.count)
    }

    /// Decodes a RESPONSE body into the call's result.
    static func decodeResponse(_ body: [UInt8]) -> Result<[UInt8], RPCError> {
        var code: StatusCode = .ok
        var message = ""
        var details: [UInt8] = []
        var notProcessed = false
        var payload: [UInt8] = []
        var reader = ProtoWire.Reader(bytes: body)
        do throws(EnvelopeError) {
            while let (field, wireType, _) = try reader.nextTag() {
                switch (field, wireType) {
                case (1, .varint): code = StatusCode(rawValue: Int32(truncatingIfNeeded: try reader.readVarint()))
                case (2, .lengthDelimited): message = try reader.readString(field: "message")
                case (3, .lengthDelimited): details = Array(body[try reader.readLengthDelimitedRange()])
                case (4, .varint): notProcessed = try reader.readVarint() != 0
                case (5, .lengthDelimited): payload = Array(body[try reader.readLengthDelimitedRange()])
                default: try reader.skip(wireType)
                }
            }
        } catch {
            return .failure(.internalError("the server's response envelope does not parse: \(error.message)"))
        }
        if code == .ok { return .success(payload) }
        return .failure(RPCError(code, message, details: details, notProcessed: notProcessed))
    }

    // MARK: - Sizes

    private static func stringFieldSize(_ string: String) -> Int {
        bytesFieldSize(string.utf8.count)
    }

    private static func bytesFieldSize(_ count: Int) -> Int {
        count == 0 ? 0 : 1 + ProtoWire.varintSize(UInt64(count)) + count
    }
}

/// An envelope that does not decode.
struct EnvelopeError: Error {
    var message: String
}
