import RaveMessages
import RaveRPC
import RaveServices

/// Serves `rave.gateway.v1.Gateway`, the one service the gateway implements itself.
struct GatewayHandler: GatewayV1.GatewayHandler {
    let pipeline: CallPipeline

    func batch(_ request: GatewayV1.BatchRequest, context: RequestContext) async throws -> GatewayV1.BatchResponse {
        let plan = try BatchPlan(request)
        // The batch is admitted once but charged per call: each call costs a backend as much as a single one.
        try pipeline.protection.admit(context: context, requestSizes: plan.callSizes)
        defer { pipeline.protection.release() }
        // The batch's idempotency key cannot stand for each of its calls; calls carry their own ids.
        let removed = CallPipeline.batchStrippedKeys
        let execute: @Sendable (BatchRunner.ReadyCall) async -> GatewayV1.BatchResult = {
            [pipeline] call in
            do throws(RPCError) {
                let request = try call.step.request(copyingFrom: call.responses)
                var result = GatewayV1.BatchResult()
                result.name = call.step.name
                result.response = try await pipeline.dispatch(
                    method: call.step.method, request: request, context: context, removing: removed)
                return result
            } catch {
                return GatewayV1.BatchResult(name: call.step.name, error: error)
            }
        }
        let bets = BetCoalescer(sendAlone: execute) {
            [pipeline] (request: [UInt8], cost: Int) throws(RPCError) -> [UInt8] in
            try await pipeline.dispatch(
                method: BetCoalescer.placeBetsMethod, request: request, context: context, removing: removed,
                cost: cost)
        }
        let runner = BatchRunner(
            execute: execute, runsTogether: { $0.method == BetCoalescer.placeBetMethod },
            executeTogether: { calls in await bets.run(calls) })
        return await runner.run(plan)
    }
}
