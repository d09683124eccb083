import RaveMessages
import RaveProtobuf

/// `ravectl login`: a guest login through the gateway; the tokens are stored for `call` and `batch`.
enum LoginCommand {
    static let usage = "ravectl login --app APP --device DEVICE \(GatewayTarget.usage)"
    static let help = """
        \(usage)
          Logs in as the guest of DEVICE in application APP (rave.identity.v1.Identity/GuestLogin; the user is
          created on first login) and stores the tokens in $XDG_CONFIG_HOME/rave/credentials.json or
          ~/.config/rave/credentials.json, readable only by you.
        \(GatewayTarget.help)
        """

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help)
            return 0
        }
        let options = try Arguments(arguments, valueOptions: GatewayTarget.valueOptions.union(["app", "device"]))
        guard options.positionals.isEmpty else { throw UsageError("login takes no positional arguments\n\n\(help)") }
        let appId = try options.required("app")
        let deviceId = try options.required("device")
        guard (1...128).contains(deviceId.count) else { throw UsageError("--device must be 1…128 characters") }
        let request = IdentityV1.GuestLoginRequest(
            appId: appId, device: IdentityV1.DeviceInfo(deviceId: deviceId, name: "ravectl", platform: "ravectl"))
        let target = options.value("target") ?? GatewayTarget.defaultAddress
        let bytes = try await GatewayTarget.call(
            method: "rave.identity.v1.Identity/GuestLogin", request: request.protobufBytes(), options: options,
            credentials: nil)
        let response = try IdentityV1.LoginResponse(protobufBytes: bytes)
        guard case .tokens(let tokens) = response.outcome else {
            printError("ravectl: the login needs a second factor, which guest logins do not support")
            return 1
        }
        let userId = response.user?.profile?.userId ?? ""
        try CredentialStore.save(
            StoredCredentials(
                target: target, appId: appId, userId: userId, accessToken: tokens.accessToken,
                accessTokenExpiresAtUnixMs: tokens.accessTokenExpiresAtUnixMs, refreshToken: tokens.refreshToken,
                sessionId: tokens.sessionId))
        print("logged in as \(userId)\(response.created ? " (new user)" : ""); tokens in \(try CredentialStore.path())")
        return 0
    }
}
