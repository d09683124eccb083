/// Every method and message type in Proto/, looked up by full name.
///
/// Built from the descriptors protoc-c generated (listed by scripts/generate-proto.sh), so it knows exactly
/// what this build can encode and decode.
public final class DescriptorRegistry: Sendable {
    /// The registry of everything in Proto/, built on first use.
    public static let shared = DescriptorRegistry.loadGenerated()

    /// Every method, by `package.Service/Method`.
    public let methods: [String: MethodSchema]
    /// Every message type (nested and map entries included), by full name.
    public let messages: [String: MessageSchema]

    init(methods: [MethodSchema], messages: [MessageSchema]) {
        self.methods = Dictionary(methods.map { ($0.fullName, $0) }, uniquingKeysWith: { first, _ in first })
        self.messages = Dictionary(messages.map { ($0.fullName, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The method called `fullName` (`rave.identity.v1.Identity/GuestLogin`); a leading `/` is accepted.
    public func method(_ fullName: String) throws(DynamicError) -> MethodSchema {
        let name = fullName.hasPrefix("/") ? String(fullName.dropFirst()) : fullName
        guard let method = methods[name] else {
            throw DynamicError(.unknownMethod, "unknown method \(fullName): expected package.Service/Method")
        }
        return method
    }

    /// The message type called `fullName` (`rave.identity.v1.User`).
    public func message(_ fullName: String) throws(DynamicError) -> MessageSchema {
        guard let message = messages[fullName] else {
            throw DynamicError(.unknownMessage, "unknown message type \(fullName)")
        }
        return message
    }
}
