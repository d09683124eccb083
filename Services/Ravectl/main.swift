// ravectl: the Rave command-line tool. Arguments are parsed by hand: the toolchain is our only dependency.
import Glibc

let usage = """
    usage: ravectl <command> [options]

    commands:
      \(ServeEchoCommand.usage)
      \(PingCommand.usage)
      \(BenchCommand.usage)
      \(BenchPostgresCommand.usage)
      \(CertsCommand.usage)
      \(MigrateCommand.usage)
      \(CallCommand.usage)
      \(BatchCommand.usage)
      \(LoginCommand.usage)
      \(AdminCommand.usage)
      \(LoadtestCommand.usage)
      \(LoadtestBets.usage)
    """

let arguments = CommandLine.arguments.dropFirst()
let status: Int32
do {
    switch arguments.first {
    case "serve-echo": status = try await ServeEchoCommand.run(arguments.dropFirst())
    case "ping": status = try await PingCommand.run(arguments.dropFirst())
    case "bench": status = try await BenchCommand.run(arguments.dropFirst())
    case "certs": status = try CertsCommand.run(arguments.dropFirst())
    case "migrate": status = try MigrateCommand.run(arguments.dropFirst())
    case "call": status = try await CallCommand.run(arguments.dropFirst())
    case "batch": status = try await BatchCommand.run(arguments.dropFirst())
    case "login": status = try await LoginCommand.run(arguments.dropFirst())
    case "admin": status = try await AdminCommand.run(arguments.dropFirst())
    case "loadtest": status = try await LoadtestCommand.run(arguments.dropFirst())
    case "help", "--help", "-h":
        print(usage)
        status = 0
    case let command?:
        throw UsageError("unknown command \"\(command)\"")
    case nil:
        throw UsageError("a command is required")
    }
} catch let error as UsageError {
    printError("ravectl: \(error)\n\n\(usage)")
    status = 2
} catch {
    printError("ravectl: \(error)")
    status = 1
}
exit(status)

/// Writes a line to standard error (Glibc's `stderr` is a global var Swift 6 won't let us touch).
func printError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}
