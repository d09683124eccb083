import CProtobufC
import CRaveProto
import Glibc

// The only file of RaveDynamic that reads protobuf-c's C structures: descriptors become schemas here, and
// unpacked C messages become `DynamicMessage` trees.

// MARK: - Schemas from descriptors

extension DescriptorRegistry {
    /// Builds schemas for every service and message descriptor that scripts/generate-proto.sh listed.
    static func loadGenerated() -> DescriptorRegistry {
        var builder = SchemaBuilder()
        var messageList = rave_message_descriptors()!
        while let descriptor = messageList.pointee {
            _ = builder.schema(for: descriptor)
            messageList += 1
        }
        var methods: [MethodSchema] = []
        var serviceList = rave_service_descriptors()!
        while let service = serviceList.pointee {
            let serviceName = String(cString: service.pointee.name)
            for index in 0..<Int(service.pointee.n_methods) {
                let method = service.pointee.methods[index]
                methods.append(
                    MethodSchema(
                        fullName: "\(serviceName)/\(String(cString: method.name))", serviceName: serviceName,
                        request: builder.schema(for: method.input), response: builder.schema(for: method.output)))
            }
            serviceList += 1
        }
        builder.fillPendingFields()
        return DescriptorRegistry(methods: methods, messages: Array(builder.messages.values))
    }
}

/// Turns descriptors into schemas; message schemas are created first and filled later, so cycles work.
private struct SchemaBuilder {
    var messages: [UnsafeRawPointer: MessageSchema] = [:]
    var enums: [UnsafeRawPointer: EnumSchema] = [:]
    var pending: [(MessageSchema, UnsafePointer<ProtobufCMessageDescriptor>)] = []

    mutating func schema(for descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> MessageSchema {
        let address = UnsafeRawPointer(descriptor)
        if let schema = messages[address] { return schema }
        let schema = MessageSchema(fullName: String(cString: descriptor.pointee.name), protobufCDescriptor: address)
        messages[address] = schema
        pending.append((schema, descriptor))
        return schema
    }

    mutating func enumSchema(for descriptor: UnsafePointer<ProtobufCEnumDescriptor>) -> EnumSchema {
        let address = UnsafeRawPointer(descriptor)
        if let schema = enums[address] { return schema }
        let values = (0..<Int(descriptor.pointee.n_values)).map { index in
            let value = descriptor.pointee.values[index]
            return (name: String(cString: value.name), number: value.value)
        }
        let schema = EnumSchema(fullName: String(cString: descriptor.pointee.name), values: values)
        enums[address] = schema
        return schema
    }

    mutating func fillPendingFields() {
        var filled: [MessageSchema] = []
        while let (schema, descriptor) = pending.popLast() {
            let fields = (0..<Int(descriptor.pointee.n_fields)).map { index in
                field(descriptor.pointee.fields[index])
            }
            schema.setFields(fields)
            filled.append(schema)
        }
        for schema in filled { markMapEntries(of: schema) }
    }

    private mutating func field(_ field: ProtobufCFieldDescriptor) -> FieldSchema {
        let type = fieldType(field.type)
        let isOneof = field.flags & PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue != 0
        var messageType: MessageSchema?
        var enumType: EnumSchema?
        if type == .message, let nested = field.descriptor {
            messageType = schema(for: nested.assumingMemoryBound(to: ProtobufCMessageDescriptor.self))
        } else if type == .enumeration, let nested = field.descriptor {
            enumType = enumSchema(for: nested.assumingMemoryBound(to: ProtobufCEnumDescriptor.self))
        }
        let name = String(cString: field.name)
        let isRepeated = field.label == PROTOBUF_C_LABEL_REPEATED
        return FieldSchema(
            name: name, jsonName: lowerCamelCase(name), number: Int32(bitPattern: field.id), type: type,
            isRepeated: isRepeated, isPacked: field.flags & PROTOBUF_C_FIELD_FLAG_PACKED.rawValue != 0,
            hasPresence: !isRepeated
                && (isOneof || type == .message || field.label == PROTOBUF_C_LABEL_OPTIONAL
                    || field.label == PROTOBUF_C_LABEL_REQUIRED),
            oneofGroup: isOneof ? Int(field.quantifier_offset) : nil, messageType: messageType, enumType: enumType,
            storage: FieldStorage(
                label: field.label.rawValue, isOneof: isOneof, offset: Int(field.offset),
                quantifierOffset: Int(field.quantifier_offset)))
    }

    /// protobuf-c's descriptors do not flag map entries; protoc names them `<Field>Entry`, nested in the
    /// message, with fields `key` = 1 and `value` = 2, which no hand-written message can imitate exactly
    /// (protoc rejects a nested type that clashes with a map's entry name).
    private func markMapEntries(of schema: MessageSchema) {
        for field in schema.fields where field.isRepeated && field.type == .message {
            guard let entry = field.messageType else { continue }
            var entryName = lowerCamelCase(field.name)
            entryName = entryName.prefix(1).uppercased() + entryName.dropFirst() + "Entry"
            if entry.fullName == "\(schema.fullName).\(entryName)", entry.fields.count == 2,
                entry.fields[0].name == "key", entry.fields[0].number == 1,
                entry.fields[1].name == "value", entry.fields[1].number == 2
            {
                entry.isMapEntry = true
            }
        }
    }

    private func fieldType(_ type: ProtobufCType) -> FieldType {
        switch type {
        case PROTOBUF_C_TYPE_INT32: return .int32
        case PROTOBUF_C_TYPE_SINT32: return .sint32
        case PROTOBUF_C_TYPE_SFIXED32: return .sfixed32
        case PROTOBUF_C_TYPE_INT64: return .int64
        case PROTOBUF_C_TYPE_SINT64: return .sint64
        case PROTOBUF_C_TYPE_SFIXED64: return .sfixed64
        case PROTOBUF_C_TYPE_UINT32: return .uint32
        case PROTOBUF_C_TYPE_FIXED32: return .fixed32
        case PROTOBUF_C_TYPE_UINT64: return .uint64
        case PROTOBUF_C_TYPE_FIXED64: return .fixed64
        case PROTOBUF_C_TYPE_FLOAT: return .float
        case PROTOBUF_C_TYPE_DOUBLE: return .double
        case PROTOBUF_C_TYPE_BOOL: return .bool
        case PROTOBUF_C_TYPE_ENUM: return .enumeration
        case PROTOBUF_C_TYPE_STRING: return .string
        case PROTOBUF_C_TYPE_BYTES: return .bytes
        default: return .message
        }
    }
}

// MARK: - Decoding through protobuf_c_message_unpack

extension DynamicMessage {
    /// Decodes `bytes` as a `schema` message with protobuf-c, then copies the C struct into Swift values.
    static func unpack(_ bytes: UnsafeRawBufferPointer, schema: MessageSchema) throws(DynamicError) -> DynamicMessage {
        let descriptor = schema.protobufCDescriptor.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
        // protobuf-c wants a non-null pointer even for an empty message.
        var empty: UInt8 = 0
        let message = withUnsafePointer(to: &empty) { emptyAddress in
            let start = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? emptyAddress
            return protobuf_c_message_unpack(descriptor, nil, bytes.count, start)
        }
        guard let message else {
            throw DynamicError(.invalidMessage, "the bytes are not a valid \(schema.fullName)")
        }
        defer { protobuf_c_message_free_unpacked(message, nil) }
        return try read(UnsafeRawPointer(message), schema: schema)
    }

    private static func read(_ base: UnsafeRawPointer, schema: MessageSchema) throws(DynamicError) -> DynamicMessage {
        var result = DynamicMessage(schema: schema)
        for field in schema.fields {
            let storage = field.storage
            if field.isRepeated {
                let count = base.load(fromByteOffset: storage.quantifierOffset, as: Int.self)
                guard count > 0, let elements = base.load(fromByteOffset: storage.offset, as: UnsafeRawPointer?.self)
                else { continue }
                let stride = elementStride(field.type)
                var list: [DynamicValue] = []
                list.reserveCapacity(count)
                for index in 0..<count {
                    list.append(try readElement(elements + index * stride, field: field))
                }
                result.values[field.number] = .list(list)
                continue
            }
            if storage.isOneof {
                let setCase = base.load(fromByteOffset: storage.quantifierOffset, as: UInt32.self)
                guard setCase == UInt32(bitPattern: field.number) else { continue }
            } else if storage.label == PROTOBUF_C_LABEL_OPTIONAL.rawValue, field.type != .string,
                field.type != .message
            {
                guard base.load(fromByteOffset: storage.quantifierOffset, as: protobuf_c_boolean.self) != 0 else {
                    continue
                }
            }
            if field.type == .message || field.type == .string,
                base.load(fromByteOffset: storage.offset, as: UnsafeRawPointer?.self) == nil
            {
                continue
            }
            let value = try readElement(base + storage.offset, field: field)
            if field.hasPresence || !value.isDefault { result.values[field.number] = value }
        }
        return result
    }

    private static func elementStride(_ type: FieldType) -> Int {
        switch type {
        case .double, .int64, .sint64, .sfixed64, .uint64, .fixed64: return 8
        case .float, .int32, .sint32, .sfixed32, .uint32, .fixed32, .enumeration: return 4
        case .bool: return MemoryLayout<protobuf_c_boolean>.stride
        case .bytes: return MemoryLayout<ProtobufCBinaryData>.stride
        case .string, .message: return MemoryLayout<UnsafeRawPointer>.stride
        }
    }

    private static func readElement(
        _ address: UnsafeRawPointer, field: FieldSchema
    ) throws(DynamicError)
        -> DynamicValue
    {
        switch field.type {
        case .double: return .double(address.load(as: Double.self))
        case .float: return .float(address.load(as: Float.self))
        case .int32, .sint32, .sfixed32: return .int32(address.load(as: Int32.self))
        case .int64, .sint64, .sfixed64: return .int64(address.load(as: Int64.self))
        case .uint32, .fixed32: return .uint32(address.load(as: UInt32.self))
        case .uint64, .fixed64: return .uint64(address.load(as: UInt64.self))
        case .bool: return .bool(address.load(as: protobuf_c_boolean.self) != 0)
        case .enumeration: return .enumeration(address.load(as: Int32.self))
        case .bytes:
            let data = address.load(as: ProtobufCBinaryData.self)
            guard data.len > 0, let start = data.data else { return .bytes([]) }
            return .bytes(Array(UnsafeBufferPointer(start: start, count: data.len)))
        case .string:
            guard let text = address.load(as: UnsafePointer<CChar>?.self) else { return .string("") }
            let utf8 = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
            guard let string = String(validating: UnsafeBufferPointer(start: utf8, count: strlen(text)), as: UTF8.self)
            else {
                throw DynamicError(.invalidMessage, "field \(field.name) is not valid UTF-8")
            }
            return .string(string)
        case .message:
            guard let type = field.messageType else {
                throw DynamicError(.invalidMessage, "field \(field.name) has no message type")
            }
            guard let nested = address.load(as: UnsafeRawPointer?.self) else {
                return .message(DynamicMessage(schema: type))
            }
            return .message(try read(nested, schema: type))
        }
    }
}
