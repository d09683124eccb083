import Foundation
import RaveMessages
import RavePostgres
import RaveRPC

/// The soak's verdict: after the failures, every acknowledged score, bet, gift and merge is there exactly once.
struct SoakChecks {
    var problems: [String] = []
    var counts: [String: Int] = [:]

    static func run(
        _ stack: SystemStack, players: [PlayerLoad], merges: MergeLoad, deletions: DeletionLoad
    ) async throws -> SoakChecks {
        var checks = SoakChecks()
        guard let reader = players.first?.caller else { return checks }
        try await checks.merges(merges, admin: IdentityV1.IdentityAdminClient(caller: stack.admin))
        try await checks.scores(players, merges: merges, reader: reader)
        for player in players { try await checks.bets(player) }
        try await checks.mergedBets(merges, stack: stack)
        if stack.hasGifts { try await checks.gifts(players, merges: merges, deleted: deletions.deletions.map(\.load)) }
        try await checks.nothingUnderSources(merges, stack: stack)
        try await checks.deletions(deletions, stack: stack)
        try await checks.ledger(stack)
        return checks
    }

    /// Each player has one entry on the board, at least their best acknowledged score, and a score they sent; each
    /// merged pair has one entry, the target's, at least the best either account had acknowledged.
    mutating func scores(_ players: [PlayerLoad], merges: MergeLoad, reader: SoakCaller) async throws {
        var entries: [String: [Int64]] = [:]
        var page: Int32 = 1
        while true {
            let scores = try await retrying {
                try await reader.leaderboards.getGlobalScores(.init(leaderboardKey: "soak", page: page, pageSize: 200))
            }
            for entry in scores.scores { entries[entry.userId, default: []].append(entry.score) }
            if scores.scores.count < 200 { break }
            page += 1
        }
        for player in players {
            let found = entries[player.userID] ?? []
            counts["scores acknowledged", default: 0] += player.acknowledgedScores
            if found.count > 1 { problems.append("score of \(player.userID) is on the board \(found.count) times") }
            if player.bestAcknowledgedScore > 0 && found.isEmpty {
                problems.append("acknowledged score \(player.bestAcknowledgedScore) of \(player.userID) is lost")
            }
            if let best = found.first, best < player.bestAcknowledgedScore || !player.attemptedScores.contains(best) {
                problems.append(
                    "board shows \(best) for \(player.userID); acknowledged best \(player.bestAcknowledgedScore)")
            }
        }
        for merge in merges.merges {
            let united = PlayerLoad.united(merge.loads)
            let found = entries[merge.targetID] ?? []
            counts["merged accounts' scores acknowledged", default: 0] += united.acknowledged
            if let left = entries[merge.sourceID] {
                problems.append("merged-away \(merge.sourceID) is still on the board with \(left)")
            }
            if found.count > 1 { problems.append("score of \(merge.targetID) is on the board \(found.count) times") }
            if united.best > 0 && found.isEmpty {
                problems.append("acknowledged score \(united.best) of merged pair \(merge.targetID) is lost")
            }
            if let best = found.first, best < united.best || !united.attempted.contains(best) {
                problems.append(
                    "board shows \(best) for \(merge.targetID); the pair's acknowledged best \(united.best)")
            }
        }
    }

    /// Every bet either merged account saw settle (before, during or after the merge, under either token) is the
    /// target's once, with one wager; failed bets none; no other bet is either's.
    mutating func mergedBets(_ load: MergeLoad, stack: SystemStack) async throws {
        let wallet = try await stack.connect(to: "wallet")
        defer { wallet.close() }
        for merge in load.merges {
            let seen = merge.sourceLoad.bets.merging(merge.targetLoad.bets) { first, _ in first }
            let rows = try await wallet.query(
                PostgresQuery(
                    """
                    SELECT b.bet_id, b.user_id,
                        (SELECT count(*) FROM transfers t WHERE t.bet_id = b.bet_id AND t.code = 'bet_wager') AS wagers
                    FROM bets b WHERE b.user_id = ANY($1::uuid[])
                    """, [PostgresArrayParameter([merge.sourceID, merge.targetID].compactMap { RaveID($0) })]))
            var stored: [String: (user: String, wagers: Int64)] = [:]
            for row in rows {
                let betID = try row.decode(RaveID.self, column: "bet_id").hex
                if stored[betID] != nil { problems.append("bet \(betID) of a merged pair is stored twice") }
                stored[betID] = (
                    try row.decode(RaveID.self, column: "user_id").hex, try row.decode(Int64.self, column: "wagers")
                )
            }
            for (betID, status) in seen {
                counts["merged accounts' bets \(status == .settled ? "settled" : "failed")", default: 0] += 1
                guard let bet = stored[betID] else {
                    problems.append("bet \(betID) (\(status)) of a merged pair is lost")
                    continue
                }
                if bet.user != merge.targetID { problems.append("bet \(betID) is held by \(bet.user), not the target") }
                if bet.wagers != (status == .settled ? 1 : 0) {
                    problems.append("bet \(betID) (\(status)) of a merged pair has \(bet.wagers) wagers")
                }
            }
            for betID in Set(stored.keys).subtracting(seen.keys) {
                problems.append("bet \(betID) is a merged pair's but no client placed it")
            }
        }
    }

    /// Nothing is left under a merged-away id: no balance, no score, no gift sent.
    mutating func nothingUnderSources(_ load: MergeLoad, stack: SystemStack) async throws {
        let sources = PostgresArrayParameter(load.merges.compactMap { RaveID($0.sourceID) })
        var queries = [
            ("wallet", "SELECT count(*) AS left FROM accounts WHERE user_id = ANY($1::uuid[]) AND balance <> 0"),
            ("leaderboards", "SELECT count(*) AS left FROM scores WHERE user_id = ANY($1::uuid[])"),
        ]
        if stack.hasGifts {
            queries.append(("gifts", "SELECT count(*) AS left FROM gifts WHERE sender_id = ANY($1::uuid[])"))
        }
        for (service, sql) in queries {
            let database = try await stack.connect(to: service)
            defer { database.close() }
            let left = try await database.query(PostgresQuery(sql, [sources]))[0].decode(Int64.self, column: "left")
            if left != 0 { problems.append("\(left) rows of \(service) are still under merged-away ids") }
        }
    }

    /// Every settled bet has exactly one wager in the player's ledger, failed bets none, and no other bet does; the
    /// balance equals the sum of the entries.
    mutating func bets(_ player: PlayerLoad) async throws {
        var wagers: [String: Int] = [:]
        var sum = 0
        var token = ""
        repeat {
            let page = try await retrying {
                try await player.caller.wallet.listTransactions(
                    .init(currency: "SOAK", economy: .sandbox, pageSize: 100, pageToken: token))
            }
            for entry in page.entries {
                sum += try Money.minor(entry.amount)
                if entry.code == "bet_wager" { wagers[entry.betId, default: 0] += 1 }
            }
            token = page.nextPageToken
        } while !token.isEmpty
        for (betID, status) in player.bets {
            let expected = status == .settled ? 1 : 0
            if wagers[betID, default: 0] != expected {
                problems.append("bet \(betID) (\(status)) has \(wagers[betID, default: 0]) wagers in the ledger")
            }
            counts["bets \(status == .settled ? "settled" : "failed")", default: 0] += 1
        }
        for betID in wagers.keys where player.bets[betID] == nil {
            problems.append("bet \(betID) is in the ledger but no client placed it")
        }
        let wallet = try await retrying { try await player.caller.wallet.getWallet(.init()) }
        let balance = wallet.balances.first { $0.currency == "SOAK" && $0.gameId.isEmpty }?.amount ?? "0"
        if try Money.minor(balance) != sum {
            problems.append("balance \(balance) of \(player.userID) differs from its ledger entries (\(sum))")
        }
    }

    /// Every acknowledged gift is pending at its recipient exactly once, and nothing else is.
    ///
    /// A merged pair's gifts (sent under either token, the source's after the merge too) name the target as their
    /// sender. A deleted player's gifts stay with their recipients; those whose answer a failure hid (never
    /// replayed: the player is gone) may be there or not.
    mutating func gifts(_ players: [PlayerLoad], merges: MergeLoad, deleted: [PlayerLoad]) async throws {
        var expected: [String: Set<String>] = [:]
        var senders: [String: String] = [:]
        for player in players + deleted {
            for (gift, recipient) in player.gifts { expected[recipient, default: []].insert(gift) }
        }
        var unknownFromDeleted = deleted.reduce(0) { $0 + $1.unresolvedGifts.count }
        for merge in merges.merges {
            for load in merge.loads {
                for (gift, recipient) in load.gifts {
                    expected[recipient, default: []].insert(gift)
                    senders[gift] = merge.targetID
                }
            }
        }
        counts["merged accounts' gifts acknowledged", default: 0] += senders.count
        for player in players {
            var received: [String] = []
            var token = ""
            repeat {
                let page = try await retrying {
                    try await player.caller.gifts.listGifts(.init(pageSize: 100, pageToken: token))
                }
                received += page.gifts.map(\.giftId)
                for gift in page.gifts where senders[gift.giftId].map({ $0 != gift.senderId }) == true {
                    problems.append("gift \(gift.giftId) names \(gift.senderId), not the merge target")
                }
                token = page.nextPageToken
            } while !token.isEmpty
            let wanted = expected[player.userID] ?? []
            counts["gifts acknowledged", default: 0] += wanted.count
            if received.count != Set(received).count { problems.append("gifts of \(player.userID) are duplicated") }
            for gift in wanted.subtracting(received) { problems.append("acknowledged gift \(gift) is lost") }
            for gift in Set(received).subtracting(wanted) {
                if unknownFromDeleted > 0 {
                    unknownFromDeleted -= 1
                } else {
                    problems.append("gift \(gift) was never acknowledged")
                }
            }
        }
    }

    /// Every merge completed: the source's session acts as the target, which lists the source once.
    mutating func merges(_ load: MergeLoad, admin: IdentityV1.IdentityAdminClient) async throws {
        for merge in load.merges {
            counts["merges", default: 0] += 1
            if let mergeID = merge.mergeID {
                let completed: Void? = try? await eventually("merge \(mergeID) completed") {
                    try await admin.getMergeStatus(.init(mergeId: mergeID)).merge?.state == .completed
                }
                if completed == nil { problems.append("merge \(mergeID) did not complete") }
            }
            let resolved: Void? = try? await eventually("\(merge.sourceID) acts as \(merge.targetID)") {
                try await merge.source.identity.getCurrentUser(.init()).user?.profile?.userId == merge.targetID
            }
            if resolved == nil { problems.append("merged user \(merge.sourceID) does not act as \(merge.targetID)") }
            let identities = try await retrying { try await merge.source.identity.getMergedIdentities(.init()) }
            if identities.userIds.filter({ $0 == merge.sourceID }).count != 1 {
                problems.append("\(merge.targetID) lists merged identities \(identities.userIds)")
            }
        }
    }

    /// Every player balance equals the movements of its account and none is negative.
    mutating func ledger(_ stack: SystemStack) async throws {
        let wrong = try await stack.walletBalancesOutOfLine()
        if wrong != 0 { problems.append("\(wrong) wallet balances differ from their transfers or are negative") }
    }
}

/// What the soak prints and writes to .bench/soak.json.
struct SoakReport {
    var seconds: Double
    var players: [PlayerLoad]
    var merges: MergeLoad
    var deletions: DeletionLoad
    var statuses: [String: Int]
    var events: [String]
    var findings: SoakChecks

    func print() {
        let total = statuses.values.reduce(0, +)
        let byStatus = statuses.sorted { $0.value > $1.value }.map { "\($0.key) \($0.value)" }
        let replayed = players.reduce(merges.replayed + deletions.replayed) { $0 + $1.replayed }
        var lines = [
            "soak: \(Int(seconds)) s of load, \(players.count) players plus a merging and a deleting client, \(total) calls",
            "calls by status: " + byStatus.joined(separator: ", "),
        ]
        lines += events.map { "failure: \($0)" }
        lines.append("calls with an outcome hidden by a failure, replayed with the same ids afterwards: \(replayed)")
        lines += findings.counts.sorted { $0.key < $1.key }.map { "checked: \($0.value) \($0.key)" }
        lines.append(
            findings.problems.isEmpty
                ? "verdict: nothing lost, nothing duplicated, ledger sums to zero"
                : "verdict: \(findings.problems.count) problems")
        Swift.print(lines.joined(separator: "\n"))
        let json: [String: Any] = [
            "name": "soak", "seconds": seconds, "players": players.count, "calls": total, "statuses": statuses,
            "failures": events, "checked": findings.counts,
            "replayed": replayed, "problems": findings.problems,
        ]
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".bench")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if let data = try? JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys]) {
            try? data.write(to: directory.appendingPathComponent("soak.json"))
        }
    }
}
