/// The parts of descriptor.proto the generator uses, decoded from `protoc --descriptor_set_out`.
///
/// Field numbers below are descriptor.proto's; see google/protobuf/descriptor.proto.
struct FileDescriptor {
    var name = ""
    var package = ""
    var messages: [MessageDescriptor] = []
    var enums: [EnumDescriptor] = []
    var services: [ServiceDescriptor] = []
    /// Leading comments by source path ([4, 0, 2, 1] is message 0, field 1).
    var comments: [[Int]: String] = [:]

    init(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, value in
            switch number {
            case 1: name = value.string
            case 2: package = value.string
            case 4: messages.append(try MessageDescriptor(value.message))
            case 5: enums.append(try EnumDescriptor(value.message))
            case 6: services.append(try ServiceDescriptor(value.message))
            case 9: try readSourceCodeInfo(value.message)
            default: break
            }
        }
    }

    private mutating func readSourceCodeInfo(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, location in
            guard number == 1 else { return }
            var path: [Int] = []
            var leading = ""
            try WireReader.forEachField(in: location.message) { number, value in
                switch number {
                case 1: path += try value.integers
                case 3: leading = value.string
                default: break
                }
            }
            if !leading.isEmpty { comments[path] = leading }
        }
    }
}

/// Reads every file of a FileDescriptorSet.
func readDescriptorSet(_ bytes: [UInt8]) throws -> [FileDescriptor] {
    var files: [FileDescriptor] = []
    try WireReader.forEachField(in: bytes[...]) { number, value in
        if number == 1 { files.append(try FileDescriptor(value.message)) }
    }
    return files
}

struct MessageDescriptor {
    var name = ""
    var fields: [FieldDescriptor] = []
    var nestedMessages: [MessageDescriptor] = []
    var enums: [EnumDescriptor] = []
    var oneofNames: [String] = []
    var isMapEntry = false

    init(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, value in
            switch number {
            case 1: name = value.string
            case 2: fields.append(try FieldDescriptor(value.message))
            case 3: nestedMessages.append(try MessageDescriptor(value.message))
            case 4: enums.append(try EnumDescriptor(value.message))
            case 7:
                try WireReader.forEachField(in: value.message) { number, option in
                    if number == 7 { isMapEntry = option.integer != 0 }
                }
            case 8:
                try WireReader.forEachField(in: value.message) { number, name in
                    if number == 1 { oneofNames.append(name.string) }
                }
            default: break
            }
        }
    }
}

struct FieldDescriptor {
    /// FieldDescriptorProto.Type, by its wire number.
    enum Kind: Int {
        case double = 1, float, int64, uint64, int32, fixed64, fixed32, bool, string, group, message, bytes,
            uint32, `enum`, sfixed32, sfixed64, sint32, sint64
    }

    var name = ""
    var number = 0
    var isRepeated = false
    var kind = Kind.int32
    /// The fully qualified type of a message or enum field, with a leading dot.
    var typeName = ""
    var oneofIndex: Int?
    var isProto3Optional = false
    /// The name in protobuf's JSON mapping, as protoc computed it ("timeout_ms" → "timeoutMs").
    var jsonName = ""

    init(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, value in
            switch number {
            case 1: name = value.string
            case 3: self.number = value.integer
            case 4: isRepeated = value.integer == 3
            case 5:
                guard let kind = Kind(rawValue: value.integer) else {
                    throw GeneratorError("unknown field type \(value.integer)")
                }
                self.kind = kind
            case 6: typeName = value.string
            case 9: oneofIndex = value.integer
            case 10: jsonName = value.string
            case 17: isProto3Optional = value.integer != 0
            default: break
            }
        }
    }
}

struct EnumDescriptor {
    var name = ""
    var values: [(name: String, number: Int32)] = []

    init(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, value in
            switch number {
            case 1: name = value.string
            case 2:
                var valueName = ""
                var valueNumber: Int32 = 0
                try WireReader.forEachField(in: value.message) { number, field in
                    if number == 1 { valueName = field.string }
                    if number == 2 { valueNumber = Int32(truncatingIfNeeded: field.integer) }
                }
                values.append((valueName, valueNumber))
            default: break
            }
        }
    }
}

struct ServiceDescriptor {
    struct Method {
        var name = ""
        var inputType = ""
        var outputType = ""
        var isStreaming = false
    }

    var name = ""
    var methods: [Method] = []

    init(_ bytes: ArraySlice<UInt8>) throws {
        try WireReader.forEachField(in: bytes) { number, value in
            switch number {
            case 1: name = value.string
            case 2:
                var method = Method()
                try WireReader.forEachField(in: value.message) { number, field in
                    switch number {
                    case 1: method.name = field.string
                    case 2: method.inputType = field.string
                    case 3: method.outputType = field.string
                    case 5, 6: method.isStreaming = method.isStreaming || field.integer != 0
                    default: break
                    }
                }
                methods.append(method)
            default: break
            }
        }
    }
}
