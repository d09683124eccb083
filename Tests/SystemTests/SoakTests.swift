import Foundation
import RaveMessages
import RavePostgres
import RaveRPC
import RaveTransport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `make soak` (scripts/soak.sh): the stack under load while services, PostgreSQL and connections fail.
///
/// A mixed load runs through the gateway, with merges and account deletions racing with writes, while every service
/// is killed with SIGKILL in turn and restarted, PostgreSQL restarts, and client connections drop at random.
/// Afterwards nothing acknowledged is lost or duplicated, no database names a deleted player, the ledger sums to zero
/// and every service is ready again.
/// Runs only when RAVE_SOAK_SECONDS is set, so `make test` skips it.
@Suite("System: soak under failures", .timeLimit(.minutes(60)))
struct SoakTests {
    static let seconds = ProcessInfo.processInfo.environment["RAVE_SOAK_SECONDS"].flatMap(Int.init)
    static let playerCount = 12

    @Test(.enabled(if: seconds != nil, "set RAVE_SOAK_SECONDS (scripts/soak.sh does)"))
    func nothingAcknowledgedIsLostOrDuplicatedWhileServicesAndPostgresFail() async throws {
        let duration = Duration.seconds(max(30, Self.seconds ?? 300))
        try await SystemStack.with { stack in
            let setup = try await SoakSetup.prepare(stack, players: Self.playerCount)
            let tally = setup.tally
            let deadline = ContinuousClock.now.advanced(by: duration)
            let started = ContinuousClock.now

            let chaos = Task { try await SoakChaos.run(stack, connections: setup.connections, until: deadline) }
            let merges = Task {
                var load = setup.merges
                await load.run(
                    recipients: setup.players.map(\.userID), withGifts: stack.hasGifts, until: deadline)
                return load
            }
            let deletions = Task {
                var load = setup.deletions
                await load.run(
                    recipients: setup.players.map(\.caller), recipientIDs: setup.players.map(\.userID),
                    withGifts: stack.hasGifts, until: deadline)
                return load
            }
            var players = await withTaskGroup(of: PlayerLoad.self) { group in
                for player in setup.players {
                    let recipients = setup.players.map(\.userID).filter { $0 != player.userID }
                    group.addTask {
                        var load = player
                        await load.run(recipients: recipients, withGifts: stack.hasGifts, until: deadline)
                        return load
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            var mergeLoad = await merges.value
            var deletionLoad = await deletions.value
            let events = try await chaos.value
            tally.stop()
            let loadSeconds = (ContinuousClock.now - started) / .seconds(1)

            for process in stack.processes.values { try await process.waitUntilReady(timeout: .seconds(60)) }
            for index in players.indices { try await players[index].resolve() }
            try await mergeLoad.resolve()
            try await deletionLoad.resolve()
            let findings = try await SoakChecks.run(
                stack, players: players, merges: mergeLoad, deletions: deletionLoad)
            SoakReport(
                seconds: loadSeconds, players: players, merges: mergeLoad, deletions: deletionLoad,
                statuses: tally.snapshot, events: events, findings: findings
            ).print()
            #expect(findings.problems.isEmpty, "\(findings.problems.joined(separator: "\n"))")
            for connection in setup.connections { connection.close() }
        }
    }
}

/// The soak's application, players (funded) and clients, made before any failure starts.
struct SoakSetup {
    var players: [PlayerLoad]
    var merges: MergeLoad
    var deletions: DeletionLoad
    var connections: [DroppableConnection]
    var tally: StatusTally

    static func prepare(_ stack: SystemStack, players count: Int) async throws -> SoakSetup {
        let appID = try await stack.makeApplication(settings: .init(mergePolicy: .automatic, crossAppLogin: true))
        _ = try await LeaderboardsV1.LeaderboardsAdminClient(caller: stack.admin).defineLeaderboard(
            .init(appId: appID, definition: .init(key: "soak", name: "Soak", sorter: 1, active: true)))
        let walletAdmin = WalletV1.WalletAdminClient(caller: stack.admin)
        _ = try await walletAdmin.createCurrency(.init(code: "SOAK", decimals: 2))
        let dice = WalletV1.OddsDefinition(
            sides: 2, winningNumbers: 1, multiplierNumerator: 2, multiplierDenominator: 1)
        _ = try await walletAdmin.createGame(.init(game: .init(gameId: "dice", name: "Dice", math: .odds(dice))))
        if stack.hasGifts {
            _ = try await GiftsV1.GiftsAdminClient(caller: stack.admin).createGiftType(
                .init(appId: appID, giftType: .init(key: "heart", name: "Heart")))
        }
        let tally = StatusTally()
        var connections: [DroppableConnection] = []
        func connection() throws -> DroppableConnection {
            let made = try DroppableConnection {
                RPCClient(
                    host: "127.0.0.1", port: stack.gatewayPort,
                    tls: try TLSContext(.client(trustRootsPath: "\(stack.certificates)/ca.pem")),
                    group: SystemStack.group)
            }
            connections.append(made)
            return made
        }
        var players: [PlayerLoad] = []
        for index in 0..<count {
            let session = try await stack.signUp(appID: appID, name: "Soak\(index)")
            _ = try await walletAdmin.deposit(
                .init(
                    transfer: .init(
                        operationId: UUID().hex, userId: session.userID, currency: "SOAK", economy: .sandbox,
                        amount: "1000.00", reason: "soak")))
            let caller = SoakCaller(connection: try connection(), accessToken: session.accessToken, tally: tally)
            players.append(PlayerLoad(userID: session.userID, caller: caller))
        }
        let merges = MergeLoad(
            caller: SoakCaller(connection: try connection(), accessToken: "", tally: tally), appID: appID,
            providers: stack.providers, admin: stack.admin)
        let deletions = DeletionLoad(
            caller: SoakCaller(connection: try connection(), accessToken: "", tally: tally), appID: appID,
            admin: stack.admin)
        return SoakSetup(
            players: players, merges: merges, deletions: deletions, connections: connections, tally: tally)
    }
}

/// The failures: each service killed with SIGKILL in turn and restarted after a supervisor-like pause, one
/// PostgreSQL restart, and client connections dropped at random throughout.
enum SoakChaos {
    static func run(
        _ stack: SystemStack, connections: [DroppableConnection], until deadline: ContinuousClock.Instant
    ) async throws -> [String] {
        let dropper = Task {
            var drops = 0
            while ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(Int.random(in: 200...1500)))
                try connections.randomElement()?.drop()
                drops += 1
            }
            return drops
        }
        let victims = stack.services + ["gateway", "postgresql"]
        let interval = (deadline - ContinuousClock.now) / (victims.count + 1)
        var events: [String] = []
        for victim in victims {
            try await Task.sleep(for: interval)
            let down = ContinuousClock.now
            if victim == "postgresql" {
                try await restartPostgres()
            } else {
                try await stack.restart(victim, pause: .seconds(1))
            }
            events.append("\(victim): back after \(Self.seconds(ContinuousClock.now - down)) s")
        }
        events.append("client connections dropped: \(try await dropper.value)")
        return events
    }

    /// `pg_ctl restart -m fast` on the with-postgres.sh cluster (RAVE_TEST_POSTGRES_CTL, RAVE_TEST_POSTGRES_DATADIR).
    static func restartPostgres() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let control = environment["RAVE_TEST_POSTGRES_CTL"], let data = environment["RAVE_TEST_POSTGRES_DATADIR"]
        else { throw StackError("RAVE_TEST_POSTGRES_CTL is not set: run the soak through scripts/with-postgres.sh") }
        let words = control.split(separator: " ").map(String.init)
        let status = try await run(words + ["-D", data, "-m", "fast", "-w", "-t", "60", "restart"])
        guard status == 0 else { throw StackError("pg_ctl restart failed with status \(status)") }
    }

    /// Runs a command to its end on a thread of its own and returns its wait status.
    ///
    /// Foundation's Process is not used here: it never noticed the end of `runuser … pg_ctl restart` (whose server outlives it) and hung.
    static func run(_ arguments: [String]) async throws -> Int32 {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var actions = posix_spawn_file_actions_t()
                posix_spawn_file_actions_init(&actions)
                defer { posix_spawn_file_actions_destroy(&actions) }
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
                let argv = arguments.map { strdup($0) } + [nil]
                defer { argv.forEach { free($0) } }
                var pid: pid_t = 0
                let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
                guard spawned == 0 else {
                    continuation.resume(
                        throwing: StackError("cannot run \(arguments[0]): \(String(cString: strerror(spawned)))"))
                    return
                }
                var status: Int32 = 0
                while waitpid(pid, &status, 0) == -1 {
                    // ECHILD: someone else reaped it; only the exit status is unknown then.
                    guard errno == EINTR else { status = 0; break }
                }
                continuation.resume(returning: status)
            }
        }
    }

    static func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18)
    }
}
