/// How proto names become Swift names, and which C names protoc-c 1.4 gives the same things.
enum Naming {
    /// The namespace enum of a package: "rave.rpc.v1" → "RpcV1" (the common "rave." prefix is dropped).
    static func namespace(ofPackage package: String) -> String {
        var parts = package.split(separator: ".").map(String.init)
        if parts.count > 1, parts[0] == "rave" { parts.removeFirst() }
        return parts.map { upperCamel($0) }.joined()
    }

    /// "timeout_ms" → "TimeoutMs".
    static func upperCamel(_ name: String) -> String {
        var result = ""
        var nextIsUpper = true
        for character in name {
            if character == "_" {
                nextIsUpper = true
            } else if nextIsUpper {
                result += character.uppercased()
                nextIsUpper = false
            } else {
                result.append(character)
            }
        }
        return result
    }

    /// "timeout_ms" → "timeoutMs", "EchoAfterDelay" → "echoAfterDelay".
    static func lowerCamel(_ name: String) -> String {
        let upper = upperCamel(name)
        guard let first = upper.first else { return upper }
        return first.lowercased() + upper.dropFirst()
    }

    /// A Swift identifier, in backticks when it is a keyword.
    static func escaped(_ identifier: String) -> String {
        swiftKeywords.contains(identifier) ? "`\(identifier)`" : identifier
    }

    /// Swift case names for an enum's values: lowerCamelCase, without the enum's UPPER_SNAKE name as prefix
    /// (SERVING_STATUS_UNSPECIFIED → unspecified, COLOR_DEEP_BLUE → deepBlue).
    ///
    /// The prefix is dropped from each value that has it, unless that would make two names equal or a
    /// name start with a digit; then every value keeps its full name.
    static func caseNames(of enumeration: EnumDescriptor) -> [String] {
        let prefix = camelToUpperSnake(enumeration.name) + "_"
        let stripped = enumeration.values.map { value in
            value.name.hasPrefix(prefix) ? String(value.name.dropFirst(prefix.count)) : value.name
        }
        let usable =
            Set(stripped).count == stripped.count
            && stripped.allSatisfy { name in name.first.map { !$0.isNumber } ?? false }
        return zip(enumeration.values, stripped).map { value, stripped in
            lowerCamel((usable ? stripped : value.name).lowercased())
        }
    }

    /// "ServingStatus" → "SERVING_STATUS", as protoc's style guide prefixes enum values.
    static func camelToUpperSnake(_ name: String) -> String {
        var result = ""
        var previousIsLower = false
        for character in name {
            if character.isUppercase, previousIsLower { result += "_" }
            result += character.uppercased()
            previousIsLower = character.isLowercase || character.isNumber
        }
        return result
    }

    // MARK: - protoc-c names (protoc-c/c_helpers.cc)

    /// The C type protoc-c declares for a message or enum: "rave.rpc.v1.GoAway" → "Rave__Rpc__V1__GoAway".
    static func cTypeName(fullName: String) -> String {
        fullName.split(separator: ".").map { upperCamel(String($0)) }.joined(separator: "__")
    }

    /// The prefix of protoc-c's functions and descriptors: "rave.rpc.v1.GoAway" → "rave__rpc__v1__go_away".
    static func cFunctionPrefix(fullName: String) -> String {
        fullName.split(separator: ".").map { cCamelToLower(String($0)) }.joined(separator: "__")
    }

    /// The struct member protoc-c declares for a field: lowercased, with "_" appended to C/C++ keywords.
    static func cFieldName(_ name: String) -> String {
        let lower = name.lowercased()
        return cKeywords.contains(lower) ? lower + "_" : lower
    }

    /// protoc-c's CamelToLower: an underscore before each uppercase run, then lowercase.
    static func cCamelToLower(_ name: String) -> String {
        var result = ""
        var wasUpper = true
        for character in name {
            let isUpper = character.isASCII && character.isUppercase
            if isUpper, !wasUpper { result += "_" }
            result += isUpper ? character.lowercased() : String(character)
            wasUpper = isUpper
        }
        return result
    }

    private static let swiftKeywords: Set<String> = [
        "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init",
        "inout", "internal", "let", "open", "operator", "private", "protocol", "public", "rethrows", "static",
        "struct", "subscript", "typealias", "var", "break", "case", "continue", "default", "defer", "do", "else",
        "fallthrough", "for", "guard", "if", "in", "repeat", "return", "switch", "where", "while", "as", "Any",
        "catch", "false", "is", "nil", "super", "self", "Self", "throw", "throws", "true", "try", "Type",
        "Protocol", "await", "consume", "copy", "discard", "borrowing", "consuming", "some", "any",
    ]

    private static let cKeywords: Set<String> = [
        "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "class",
        "compl", "const", "const_cast", "continue", "default", "delete", "do", "double", "dynamic_cast", "else",
        "enum", "explicit", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long",
        "mutable", "namespace", "new", "not", "not_eq", "operator", "or", "or_eq", "private", "protected",
        "public", "register", "reinterpret_cast", "return", "short", "signed", "sizeof", "static", "static_cast",
        "struct", "switch", "template", "this", "throw", "true", "try", "typedef", "typeid", "typename", "union",
        "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
    ]
}

/// Every message and enum of the descriptor set, by fully qualified name (".rave.rpc.v1.Request").
struct TypeRegistry {
    struct Entry {
        /// "rave.rpc.v1.Request.MetadataEntry", without the leading dot.
        var fullName: String
        /// "RpcV1.Request".
        var swiftName: String
        var message: MessageDescriptor?
        var enumeration: EnumDescriptor?

        var cTypeName: String { Naming.cTypeName(fullName: fullName) }
        var cFunctionPrefix: String { Naming.cFunctionPrefix(fullName: fullName) }
    }

    private(set) var entries: [String: Entry] = [:]

    init(files: [FileDescriptor]) {
        for file in files {
            let namespace = Naming.namespace(ofPackage: file.package)
            for message in file.messages { add(message, package: file.package, swiftScope: namespace) }
            for enumeration in file.enums {
                add(enumeration, fullName: file.package + "." + enumeration.name, swiftScope: namespace)
            }
        }
    }

    private mutating func add(_ message: MessageDescriptor, package: String, swiftScope: String) {
        let fullName = package + "." + message.name
        let swiftName = swiftScope + "." + Naming.escaped(message.name)
        entries["." + fullName] = Entry(fullName: fullName, swiftName: swiftName, message: message)
        for nested in message.nestedMessages { add(nested, package: fullName, swiftScope: swiftName) }
        for enumeration in message.enums {
            add(enumeration, fullName: fullName + "." + enumeration.name, swiftScope: swiftName)
        }
    }

    private mutating func add(_ enumeration: EnumDescriptor, fullName: String, swiftScope: String) {
        let swiftName = swiftScope + "." + Naming.escaped(enumeration.name)
        entries["." + fullName] = Entry(fullName: fullName, swiftName: swiftName, enumeration: enumeration)
    }

    func entry(_ typeName: String) throws -> Entry {
        guard let entry = entries[typeName] else { throw GeneratorError("unknown type \(typeName)") }
        return entry
    }

    /// Whether `message` has a string field, itself or in a message it holds (map entries included): its
    /// decoder then checks the wire bytes for strings holding NUL.
    func holdsStrings(_ message: MessageDescriptor) -> Bool {
        var visited: Set<String> = []
        return holdsStrings(message, visited: &visited)
    }

    private func holdsStrings(_ message: MessageDescriptor, visited: inout Set<String>) -> Bool {
        for field in message.fields {
            if field.kind == .string { return true }
            guard field.kind == .message, visited.insert(field.typeName).inserted,
                let nested = entries[field.typeName]?.message
            else { continue }
            if holdsStrings(nested, visited: &visited) { return true }
        }
        return false
    }
}
