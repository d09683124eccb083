import RaveCrypto
import RaveMessages
import Testing

@testable import Wallet

/// Slot and odds math, the exact return to player, and provably fair draws.
@Suite struct GameMathTests {
    /// A small sample slot: 3 reels of 10 stops, 3 rows, 5 paylines.
    static func sampleSlot() -> WalletV1.SlotDefinition {
        var slot = WalletV1.SlotDefinition()
        slot.reels = [
            WalletV1.Reel(symbols: ["7", "BAR", "A", "K", "Q", "A", "K", "Q", "BAR", "J"]),
            WalletV1.Reel(symbols: ["A", "7", "K", "Q", "BAR", "J", "A", "K", "Q", "J"]),
            WalletV1.Reel(symbols: ["K", "A", "7", "Q", "J", "BAR", "A", "K", "Q", "J"]),
        ]
        slot.rows = 3
        slot.paylines = [[1, 1, 1], [0, 0, 0], [2, 2, 2], [0, 1, 2], [2, 1, 0]].map { WalletV1.Payline(rows: $0) }
        slot.paytable = [
            ("7", 3, 100), ("BAR", 3, 40), ("A", 3, 20), ("K", 3, 15), ("Q", 3, 10), ("J", 3, 8), ("A", 2, 2),
            ("7", 2, 5), ("7", 1, 1),
        ].map { WalletV1.PaytableEntry(symbol: $0.0, count: Int32($0.1), multiplier: Int64($0.2)) }
        return slot
    }

    @Test func returnToPlayerIsExactForATinySlot() throws {
        var slot = WalletV1.SlotDefinition()
        slot.reels = [WalletV1.Reel(symbols: ["A", "B"]), WalletV1.Reel(symbols: ["A", "B"])]
        slot.rows = 1
        slot.paylines = [WalletV1.Payline(rows: [0, 0])]
        slot.paytable = [
            WalletV1.PaytableEntry(symbol: "A", count: 2, multiplier: 10),
            WalletV1.PaytableEntry(symbol: "B", count: 2, multiplier: 2),
        ]
        let rtp = try SlotMachine(slot).returnToPlayer()
        // AA pays 10, BB pays 2, AB and BA nothing: 12 over 4 combinations.
        #expect(rtp == Fraction(numerator: 12, denominator: 4))
        #expect(rtp.decimal() == "3.000000")
    }

    @Test func longestListedRunPaysOnALine() throws {
        let machine = try SlotMachine(Self.sampleSlot())
        let window = [["7", "7", "K"], ["A", "A", "A"], ["Q", "J", "7"]]
        #expect(machine.evaluate(line: 1, window: window).multiplier == 5)
        #expect(machine.evaluate(line: 0, window: window).multiplier == 20)
        #expect(machine.evaluate(line: 2, window: window).multiplier == 0)
        #expect(
            machine.evaluate(line: 4, window: window)
                == .init(symbols: ["Q", "A", "K"], symbol: "", count: 0, multiplier: 0))
    }

    @Test func oddsGameReturnToPlayer() throws {
        let game = try OddsGame(
            WalletV1.OddsDefinition(sides: 100, winningNumbers: 49, multiplierNumerator: 2, multiplierDenominator: 1))
        #expect(game.returnToPlayer().decimal() == "0.980000")
    }

    @Test func invalidDefinitionsAreRejected() {
        var slot = Self.sampleSlot()
        slot.paylines.append(WalletV1.Payline(rows: [0, 3, 0]))
        #expect(throws: WalletError.self) { try SlotMachine(slot) }
        var unknownSymbol = Self.sampleSlot()
        unknownSymbol.paytable.append(WalletV1.PaytableEntry(symbol: "Z", count: 3, multiplier: 5))
        #expect(throws: WalletError.self) { try SlotMachine(unknownSymbol) }
        #expect(throws: WalletError.self) {
            try OddsGame(
                WalletV1.OddsDefinition(sides: 6, winningNumbers: 6, multiplierNumerator: 1, multiplierDenominator: 1))
        }
        #expect(throws: WalletError.self) { try GameMath(WalletV1.Game(gameId: "g", name: "no math")) }
    }

    @Test func fairRandomIsDeterministicPerSeedClientSeedAndNonce() {
        let seed = Array(repeating: UInt8(7), count: 32)
        var first = FairRandom(serverSeed: seed, clientSeed: "abc", nonce: 1)
        var again = FairRandom(serverSeed: seed, clientSeed: "abc", nonce: 1)
        var other = FairRandom(serverSeed: seed, clientSeed: "abc", nonce: 2)
        let a = (0..<50).map { _ in first.next(below: 37) }
        #expect(a == (0..<50).map { _ in again.next(below: 37) })
        #expect(a != (0..<50).map { _ in other.next(below: 37) })
        #expect(a.allSatisfy { (0..<37).contains($0) })
    }

    /// The published scheme: a bet draws from HMAC-SHA256(server seed, "client seed:nonce"), then from
    /// "client seed:nonce:round" blocks, 32-bit big-endian words in order; a player's own verifier relies on it.
    @Test func fairRandomDrawsFromTheDocumentedMessages() {
        let cases: [(client: String, nonce: Int64, round: Int?)] = [
            ("abc", 0, nil), ("", 1, nil), ("ünï:code", 1_234_567_890_123, 3), ("x", .max, 12),
        ]
        for (client, nonce, round) in cases {
            let text = round.map { "\(client):\(nonce):\($0)" } ?? "\(client):\(nonce)"
            #expect(FairRandom.message(client, nonce, round: round) == Array(text.utf8))
        }
        let seed = Array(repeating: UInt8(7), count: 32)
        let block = Digest.hmacSHA256(key: seed, message: Array("abc:1".utf8))
        let firstWord = block[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        var random = FairRandom(serverSeed: seed, clientSeed: "abc", nonce: 1)
        // Below 2^32 - 1 every word but the largest is accepted as it is.
        #expect(random.next(below: Int(UInt32.max)) == Int(firstWord))
    }

    /// One million provably fair spins of the sample slot: the mean payout lands within five standard errors of
    /// the exact return to player, and each reel's stops pass a chi-square uniformity test.
    @Test func sampleSlotConvergesToItsReturnToPlayerAndStopsAreUniform() throws {
        let machine = try SlotMachine(Self.sampleSlot())
        let math = GameMath.slot(machine)
        let rtp = machine.returnToPlayer().doubleValue
        let spins = 1_000_000
        let lines = Array(machine.paylines.indices)
        let seed = Digest.sha256(Array("rtp-test-seed".utf8))
        var counts = machine.reels.map { [Int](repeating: 0, count: $0.count) }
        var sum = 0.0
        var sumOfSquares = 0.0
        let wager: Int64 = 5_000
        for nonce in 0..<spins {
            var random = FairRandom(serverSeed: seed, clientSeed: "client", nonce: Int64(nonce))
            let play = try math.play(wager: wager, lines: lines, random: &random)
            for (reel, stop) in play.stops.enumerated() { counts[reel][stop] += 1 }
            let ratio = Double(play.payout) / Double(wager)
            sum += ratio
            sumOfSquares += ratio * ratio
        }
        let mean = sum / Double(spins)
        let standardError = ((sumOfSquares / Double(spins) - mean * mean) / Double(spins)).squareRoot()
        #expect(abs(mean - rtp) < 5 * standardError, "mean \(mean), exact \(rtp), standard error \(standardError)")
        for reelCounts in counts {
            let expected = Double(spins) / Double(reelCounts.count)
            let chiSquare = reelCounts.reduce(0.0) { $0 + (Double($1) - expected) * (Double($1) - expected) / expected }
            // 9 degrees of freedom: 27.88 is the 0.001 critical value.
            #expect(chiSquare < 27.88, "chi-square \(chiSquare) for counts \(reelCounts)")
        }
    }
}
