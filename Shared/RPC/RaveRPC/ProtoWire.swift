/// The few protobuf wire-format primitives the envelope codec and `EncodedMetadata` need.
enum ProtoWire {
    /// The wire types of protobuf fields (group types are refused: proto3 has none).
    enum WireType: UInt8 {
        case varint = 0
        case fixed64 = 1
        case lengthDelimited = 2
        case fixed32 = 5
    }

    static func varintSize(_ value: UInt64) -> Int {
        var size = 1
        var rest = value >> 7
        while rest != 0 {
            size += 1
            rest >>= 7
        }
        return size
    }

    static func appendVarint(_ value: UInt64, to output: inout [UInt8]) {
        var rest = value
        while rest >= 0x80 {
            output.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        output.append(UInt8(rest))
    }

    static func appendVarintField(_ value: UInt64, field: UInt8, to output: inout [UInt8]) {
        output.append(field << 3 | WireType.varint.rawValue)
        appendVarint(value, to: &output)
    }

    /// Appends a string field; an empty string is the default and is left out.
    static func appendString(_ string: String, field: UInt8, to output: inout [UInt8]) {
        let count = string.utf8.count
        guard count > 0 else { return }
        output.append(field << 3 | WireType.lengthDelimited.rawValue)
        appendVarint(UInt64(count), to: &output)
        output.append(contentsOf: string.utf8)
    }

    /// Appends a bytes field; empty bytes are the default and are left out.
    static func appendBytes(_ bytes: [UInt8], field: UInt8, to output: inout [UInt8]) {
        guard !bytes.isEmpty else { return }
        output.append(field << 3 | WireType.lengthDelimited.rawValue)
        appendVarint(UInt64(bytes.count), to: &output)
        output.append(contentsOf: bytes)
    }

    /// Whether `bytes` are ASCII without NUL (so valid text as they are).
    static func isASCIIWithoutNUL(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.allSatisfy { $0 &- 1 < 0x7F }
    }

    /// Reads fields from encoded bytes, checking every length against what is there.
    ///
    /// Over an array's bytes or over bytes in place (a frame body in the decoder's buffer); indexes and ranges are
    /// those of `bytes`.
    struct Reader<Bytes: RandomAccessCollection<UInt8>> where Bytes.Index == Int {
        let bytes: Bytes
        private(set) var index: Int

        init(slice: Bytes) {
            self.bytes = slice
            self.index = slice.startIndex
        }

        /// The next field's number, wire type and the index its tag starts at; nil at the end.
        mutating func nextTag() throws(EnvelopeError) -> (field: UInt64, wireType: WireType, start: Int)? {
            guard index < bytes.endIndex else { return nil }
            let start = index
            let tag = try readVarint()
            guard let wireType = WireType(rawValue: UInt8(tag & 7)), tag >> 3 != 0 else {
                throw EnvelopeError(message: "field tag \(tag) is not valid")
            }
            return (tag >> 3, wireType, start)
        }

        mutating func readVarint() throws(EnvelopeError) -> UInt64 {
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.endIndex, shift < 64 {
                let byte = bytes[index]
                index += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
            throw EnvelopeError(message: "a varint is cut off or too long")
        }

        /// The index range of a length-delimited field's content; the reader moves past it.
        mutating func readLengthDelimitedRange() throws(EnvelopeError) -> Range<Int> {
            let length = try readVarint()
            guard length <= UInt64(bytes.endIndex - index) else {
                throw EnvelopeError(message: "a field of \(length) bytes runs past the end")
            }
            let range = index..<index + Int(length)
            index = range.upperBound
            return range
        }

        mutating func readString(field: String) throws(EnvelopeError) -> String {
            try string(in: readLengthDelimitedRange(), field: field)
        }

        /// The UTF-8 text of `range` (a range `readLengthDelimitedRange()` returned).
        ///
        /// A NUL is refused like invalid UTF-8, as the generated decoders refuse it: text that a C string, a
        /// database column or a log line would cut short never enters the system.
        func string(in range: Range<Int>, field: String) throws(EnvelopeError) -> String {
            let string = bytes[range].withContiguousStorageIfAvailable { buffer -> String? in
                // Nearly every string here (methods, metadata keys) is ASCII, which is valid UTF-8 as it is;
                // the general validation goes through generic code that costs more than the copy.
                if ProtoWire.isASCIIWithoutNUL(buffer) { return String(decoding: buffer, as: UTF8.self) }
                guard !buffer.contains(0) else { return nil }
                return String(validating: buffer, as: UTF8.self)
            }
            guard let string = string ?? nil else {
                throw EnvelopeError(message: "field \(field) is not valid UTF-8 text without NUL characters")
            }
            return string
        }

        /// Refuses `range` as `string(in:field:)` would, without making the string when it is ASCII.
        func checkText(in range: Range<Int>, field: String) throws(EnvelopeError) {
            let ascii = bytes[range].withContiguousStorageIfAvailable { ProtoWire.isASCIIWithoutNUL($0) } ?? false
            if !ascii { _ = try string(in: range, field: field) }
        }

        mutating func skip(_ wireType: WireType) throws(EnvelopeError) {
            switch wireType {
            case .varint: _ = try readVarint()
            case .lengthDelimited: _ = try readLengthDelimitedRange()
            case .fixed64, .fixed32:
                let size = wireType == .fixed64 ? 8 : 4
                guard bytes.endIndex - index >= size else { throw EnvelopeError(message: "a field runs past the end") }
                index += size
            }
        }
    }
}

extension ProtoWire.Reader where Bytes == ArraySlice<UInt8> {
    init(bytes: [UInt8]) {
        self.init(slice: bytes[...])
    }
}
