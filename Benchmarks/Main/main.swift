import Foundation
import GatewayBenchmarks
import GiftsBenchmarks
import IdentityBenchmarks
import LeaderboardsBenchmarks
import PushBenchmarks
import SocialBenchmarks
import WalletBenchmarks

// `rave-bench <service>`: the services' benchmarks, which the shipped executables do not carry. Each reads its
// settings from the environment (RAVE_DATABASE_URL, RAVE_BENCH_*; docs/BENCHMARKS.md) and exits non-zero when a
// call failed.

/// A benchmark by the service it measures.
struct Benchmark {
    let service: String
    let summary: String
    let run: ([String: String]) async -> Int32
}

let benchmarks = [
    Benchmark(
        service: "identity", summary: "guest and password logins, refreshes, ResolveUsers(100), a password flood",
        run: IdentityBenchmarkCommand.run),
    Benchmark(
        service: "social", summary: "a page of 25 friends by name, follow/unfollow, FriendIds",
        run: SocialBenchmarkCommand.run),
    Benchmark(
        service: "leaderboards", summary: "the in-memory rank index: build, rank, top-100 page, insert, memory",
        run: IndexBenchmarkCommand.run),
    Benchmark(service: "gifts", summary: "send to 20, list 25 pending, accept", run: GiftsBenchmarkCommand.run),
    Benchmark(
        service: "push", summary: "fan-out of one notification and delivery to an HTTP/2 sink",
        run: FanoutBenchmark.run),
    Benchmark(
        service: "wallet", summary: "backed bets one at a time and in batches, against pgbench -N",
        run: WalletBenchmarkCommand.run),
    Benchmark(
        service: "gateway", summary: "Echo direct and through the gateway, batches of bets and reads",
        run: GatewayBenchmark.run),
]

let name = CommandLine.arguments.dropFirst().first ?? ""
guard let benchmark = benchmarks.first(where: { $0.service == name }) else {
    let lines = benchmarks.map { "  " + $0.service.padding(toLength: 14, withPad: " ", startingAt: 0) + $0.summary }
    print((["usage: rave-bench <service>"] + lines).joined(separator: "\n"))
    exit(["help", "--help", "-h"].contains(name) ? 0 : 64)
}
exit(await benchmark.run(ProcessInfo.processInfo.environment))
