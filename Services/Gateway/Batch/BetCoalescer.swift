import RaveMessages
import RaveRPC

/// Sends the `Wallet/PlaceBet` calls of a batch that are ready at the same time as one `Wallet/PlaceBets`
/// call: one round trip and one group commit instead of one per bet, with each bet's result mapped back to its
/// call as if it had been sent alone.
///
/// A bet goes in the shared call only when that cannot change its meaning: its request decodes and holds a
/// bet, its bet id is not already in the call (PlaceBets refuses duplicates as a whole, PlaceBet replays them),
/// and its chain id, if any, is not (PlaceBets would tie the two together). The others are sent alone,
/// concurrently with the shared call.
struct BetCoalescer: Sendable {
    static let placeBetMethod = "rave.wallet.v1.Wallet/PlaceBet"
    static let placeBetsMethod = "rave.wallet.v1.Wallet/PlaceBets"

    /// Sends one call of the batch on its own (the batch's single-call path).
    let sendAlone: @Sendable (BatchRunner.ReadyCall) async -> GatewayV1.BatchResult
    /// Sends the shared PlaceBets call for `bets`; `cost` is the number of calls it stands for.
    let sendShared: @Sendable (_ request: [UInt8], _ cost: Int) async throws(RPCError) -> [UInt8]

    /// Runs `calls` (all PlaceBet) and returns one result per call, in the order given.
    func run(_ calls: [BatchRunner.ReadyCall]) async -> [GatewayV1.BatchResult] {
        var results = [GatewayV1.BatchResult?](repeating: nil, count: calls.count)
        var shared: [(position: Int, bet: WalletV1.Bet)] = []
        var alone: [Int] = []
        var betIDs: Set<String> = []
        var chainIDs: Set<String> = []
        for (position, call) in calls.enumerated() {
            let request: [UInt8]
            do throws(RPCError) {
                request = try call.step.request(copyingFrom: call.responses)
            } catch {
                results[position] = GatewayV1.BatchResult(name: call.step.name, error: error)
                continue
            }
            guard let bet = (try? WalletV1.PlaceBetRequest(protobufBytes: request))?.bet,
                !betIDs.contains(bet.betId), bet.chainId.isEmpty || !chainIDs.contains(bet.chainId)
            else {
                alone.append(position)
                continue
            }
            betIDs.insert(bet.betId)
            if !bet.chainId.isEmpty { chainIDs.insert(bet.chainId) }
            shared.append((position, bet))
        }
        if shared.count == 1, let only = shared.first {
            alone.append(only.position)
            shared = []
        }
        await withTaskGroup(of: [(Int, GatewayV1.BatchResult)].self) { group in
            for position in alone {
                group.addTask { [sendAlone] in [(position, await sendAlone(calls[position]))] }
            }
            if !shared.isEmpty {
                group.addTask { [shared] in
                    let names = shared.map { calls[$0.position].step.name }
                    let mapped = await self.placeBets(shared.map(\.bet), names: names)
                    return zip(shared, mapped).map { ($0.position, $1) }
                }
            }
            for await finished in group {
                for (position, result) in finished { results[position] = result }
            }
        }
        return zip(calls, results).map { call, result in
            result ?? GatewayV1.BatchResult(name: call.step.name, error: .internalError("the bet produced no result"))
        }
    }

    /// One PlaceBets call for `bets`, its results turned into what each PlaceBet call would have returned.
    private func placeBets(_ bets: [WalletV1.Bet], names: [String]) async -> [GatewayV1.BatchResult] {
        let response: WalletV1.PlaceBetsResponse
        do throws(RPCError) {
            let bytes = try await sendShared(WalletV1.PlaceBetsRequest(bets: bets).protobufBytes(), bets.count)
            guard let decoded = try? WalletV1.PlaceBetsResponse(protobufBytes: bytes),
                decoded.results.count == bets.count
            else {
                throw .internalError("the wallet's PlaceBets answer does not hold one result per bet")
            }
            response = decoded
        } catch {
            // The shared call failed as a whole (wallet down, token refused): every bet failed the same way.
            return names.map { GatewayV1.BatchResult(name: $0, error: error) }
        }
        return zip(names, response.results).map { name, bet in
            // PlaceBet answers a failed bet with its status; PlaceBets carries it in the result.
            if bet.status == .failed {
                return GatewayV1.BatchResult(
                    name: name, error: RPCError(StatusCode(rawValue: bet.errorCode), bet.errorMessage))
            }
            var result = GatewayV1.BatchResult()
            result.name = name
            result.response = WalletV1.PlaceBetResponse(result: bet).protobufBytes()
            return result
        }
    }
}
