import RaveDynamic

/// `ravectl call METHOD`: any method, JSON in and out, transcoded through the protobuf descriptors.
enum CallCommand {
    static let usage = "ravectl call METHOD [--json '{…}' | JSON on stdin] \(GatewayTarget.usage)"
    static let help = """
        \(usage)
          Calls METHOD (package.Service/Method, e.g. rave.identity.v1.Identity/GetCurrentUser) through the
          gateway. The request is protobuf JSON (lowerCamel or proto field names, enums by name, 64-bit
          integers as strings, bytes as base64); the response is printed the same way. A failed call prints
          its status code and message and exits 1.
        \(GatewayTarget.help)
        """

    static func run(_ arguments: ArraySlice<String>) async throws -> Int32 {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(help)
            return 0
        }
        let options = try Arguments(arguments, valueOptions: GatewayTarget.valueOptions.union(["json"]))
        guard options.positionals.count == 1 else { throw UsageError("call takes one METHOD\n\n\(help)") }
        let method = options.positionals[0]
        let transcoder = JSONTranscoder()
        let request = try transcoder.requestBytes(
            method: method, json: options.value("json") ?? GatewayTarget.readStandardInput())
        let response = try await GatewayTarget.call(
            method: method, request: request, options: options, credentials: try CredentialStore.load())
        print(try transcoder.responseJSON(method: method, protobufBytes: response, pretty: true))
        return 0
    }
}
