import RaveMessages
import RaveRPC
import RaveServices

/// Serves `rave.gateway.v1.Gateway`, the one service the gateway implements itself.
struct GatewayHandler: GatewayV1.GatewayHandler {
    let pipeline: CallPipeline

    func batch(_ request: GatewayV1.BatchRequest, context: RequestContext) async throws -> GatewayV1.BatchResponse {
        let plan = try BatchPlan(request)
        // The batch is admitted once but charged per call: each call costs a backend as much as a single one.
        try pipeline.protection.admit(context: context, calls: plan.steps.count)
        defer { pipeline.protection.release() }
        for step in plan.steps { try pipeline.protection.checkSize(step.request.count, method: step.method) }
        // The batch's idempotency key cannot stand for each of its calls; calls carry their own ids.
        var callMetadata = context.metadata
        callMetadata[MetadataKey.idempotencyKey] = nil
        let runner = BatchRunner { [pipeline, callMetadata] step, responses in
            var result = GatewayV1.BatchResult()
            result.name = step.name
            do throws(RPCError) {
                let request = try step.request(copyingFrom: responses)
                result.response = try await pipeline.dispatch(
                    method: step.method, request: request, context: context, metadata: callMetadata)
            } catch {
                result.code = error.code
                result.message = error.message
                result.details = error.details
            }
            return result
        }
        var response = GatewayV1.BatchResponse()
        response.results = await runner.run(plan)
        return response
    }
}
