import RaveMessages

extension PushV1.Platform {
    /// The platform as the protocol and the docs name it, for messages: "PLATFORM_FCM (fcm)".
    var readableName: String {
        switch self {
        case .unspecified: "PLATFORM_UNSPECIFIED"
        case .apns: "PLATFORM_APNS (apns)"
        case .fcm: "PLATFORM_FCM (fcm)"
        case .unrecognized(let value): "an unknown platform (\(value))"
        }
    }
}
