import RaveMessages
import RavePostgres
import RaveRPC
import RaveServices

/// `rave.gifts.v1.Gifts`: what players do with gifts, requests and shares; requests and sharing live in the
/// extensions next to this file.
final class PlayerHandlers: GiftsV1.GiftsHandler {
    let dependencies: GiftsDependencies

    init(dependencies: GiftsDependencies) {
        self.dependencies = dependencies
    }

    func listGiftTypes(
        _ request: GiftsV1.ListGiftTypesRequest, context: RequestContext
    ) async throws -> GiftsV1.ListGiftTypesResponse {
        let player = try await dependencies.player(context)
        return GiftsV1.ListGiftTypesResponse(
            giftTypes: try await dependencies.types.all(appID: player.appID).map(\.message))
    }

    // MARK: - Gifts

    func sendGifts(
        _ request: GiftsV1.SendGiftsRequest, context: RequestContext
    ) async throws -> GiftsV1.SendGiftsResponse {
        let player = try await dependencies.player(context)
        let key = try RequestLimits.giftTypeKey(request.giftTypeKey)
        let recipients = try RequestLimits.recipients(request.recipientIds)
        guard let idempotencyKey = try RequestLimits.idempotencyKey(request.idempotencyKey, context: context) else {
            throw GiftsError.invalidArgument(
                "SendGifts needs an idempotency_key (1…128 bytes) so that a retry does not send twice")
        }
        let call = IdempotentCall(
            sender: player.userID, operation: .sendGifts, key: idempotencyKey,
            fingerprint: IdempotentCalls.fingerprint(giftTypeKey: key, recipients: request.recipientIds))
        // The send statement itself finds a stored result (and then changes nothing), so a new call costs one round
        // trip; the type comes from the cache, concurrently with the peers' screening.
        let type: GiftTypeRecord
        let screening: GiftsDependencies.Screening
        do {
            async let screened = dependencies.screen(recipients, sender: player.userID, appID: player.appID)
            type = try await dependencies.types.forSending(key, appID: player.appID)
            screening = try await screened
        } catch {
            // A retry of a call that went through is answered even while the peers are unreachable.
            if let stored = try await storedResponse(of: call, as: GiftsV1.SendGiftsResponse.self) { return stored }
            throw error
        }
        do {
            // Without a daily limit the send is one statement (gifts, events and idempotency record together);
            // with one, the counter's upsert decides first how many of them go, in the same transaction.
            let response =
                if type.dailyLimitPerSender > 0 {
                    try await dependencies.pool.transaction { transaction in
                        let allowed = try await dependencies.gifts.allowance(
                            of: player.userID, for: type, wanted: screening.eligible.count, in: transaction)
                        return try await send(type, request, screening, allowed: allowed, call, on: transaction)
                    }
                } else {
                    try await send(
                        type, request, screening, allowed: screening.eligible.count, call, on: dependencies.pool)
                }
            return response
        } catch let error as GiftsError where error == .concurrentReplay {
            return try await replayAfterRace(call, as: GiftsV1.SendGiftsResponse.self)
        }
    }

    /// Sends to the first `allowed` eligible recipients and records the response under the call's key.
    private func send(
        _ type: GiftTypeRecord, _ request: GiftsV1.SendGiftsRequest, _ screening: GiftsDependencies.Screening,
        allowed: Int, _ call: IdempotentCall, on database: some PostgresQueryable
    ) async throws -> GiftsV1.SendGiftsResponse {
        let sending = Array(screening.eligible.prefix(allowed))
        let giftIDs = sending.map { _ in RaveID.random() }
        let response = GiftsV1.SendGiftsResponse(
            results: Self.results(request.recipientIds, screening: screening, sent: sending, ids: giftIDs))
        try await dependencies.gifts.send(
            type, from: call.sender, senderName: screening.senderName, to: sending.map(\.user), giftIDs: giftIDs,
            recording: .init(
                operation: call.operation, key: call.key, fingerprint: call.fingerprint,
                response: response.protobufBytes()),
            on: database)
        return response
    }

    func listGifts(
        _ request: GiftsV1.ListGiftsRequest, context: RequestContext
    ) async throws -> GiftsV1.ListGiftsResponse {
        let player = try await dependencies.player(context)
        let limit = try RequestLimits.pageSize(request.pageSize)
        let cursor = try PageCursor.parse(request.pageToken)
        let (gifts, next) = try await dependencies.gifts.pending(
            to: player.userID, appID: player.appID, limit: limit, after: cursor)
        return GiftsV1.ListGiftsResponse(gifts: gifts, nextPageToken: next?.token ?? "")
    }

    func getGift(_ request: GiftsV1.GetGiftRequest, context: RequestContext) async throws -> GiftsV1.GetGiftResponse {
        let player = try await dependencies.player(context)
        let gift = try await dependencies.gifts.gift(
            try RequestLimits.id(request.giftId, field: "gift_id"), appID: player.appID)
        // Only the two players it concerns see a gift; anyone else learns nothing, not even that it exists.
        guard gift.senderId == player.userID.hex || gift.recipientId == player.userID.hex else {
            throw GiftsError.notFound("no gift \(request.giftId) in this application")
        }
        return GiftsV1.GetGiftResponse(gift: gift)
    }

    func acceptGift(
        _ request: GiftsV1.AcceptGiftRequest, context: RequestContext
    ) async throws -> GiftsV1.AcceptGiftResponse {
        let player = try await dependencies.player(context)
        let id = try RequestLimits.id(request.giftId, field: "gift_id")
        return GiftsV1.AcceptGiftResponse(
            gift: try await dependencies.gifts.answer(id, accept: true, recipient: player.userID, appID: player.appID))
    }

    func rejectGift(
        _ request: GiftsV1.RejectGiftRequest, context: RequestContext
    ) async throws -> GiftsV1.RejectGiftResponse {
        let player = try await dependencies.player(context)
        let id = try RequestLimits.id(request.giftId, field: "gift_id")
        return GiftsV1.RejectGiftResponse(
            gift: try await dependencies.gifts.answer(id, accept: false, recipient: player.userID, appID: player.appID))
    }

    // MARK: - Results and idempotency

    /// Per requested recipient, in request order: sent (with the id) or the reason it was not.
    static func results(
        _ requested: [String], screening: GiftsDependencies.Screening, sent: [(index: Int, user: RaveID)], ids: [RaveID]
    ) -> [GiftsV1.RecipientResult] {
        var results = requested.enumerated().map { index, userID in
            GiftsV1.RecipientResult(userId: userID, status: screening.statuses[index] ?? .dailyLimit)
        }
        for (recipient, id) in zip(sent, ids) {
            results[recipient.index].status = .sent
            results[recipient.index].id = id.hex
        }
        return results
    }

    typealias IdempotentCall = IdempotentCalls.Call

    func storedResponse<Response: ReplayableResponse>(
        of call: IdempotentCall, as type: Response.Type
    ) async throws -> Response? {
        guard
            let bytes = try await dependencies.idempotency.storedResponse(
                sender: call.sender, operation: call.operation, key: call.key, fingerprint: call.fingerprint)
        else { return nil }
        var response = try Response(protobufBytes: bytes)
        response.replayed = true
        return response
    }

    func record(_ call: IdempotentCall, response: [UInt8], in transaction: PostgresTransaction) async throws {
        guard
            try await dependencies.idempotency.record(
                sender: call.sender, operation: call.operation, key: call.key, fingerprint: call.fingerprint,
                response: response, in: transaction)
        else { throw GiftsError.concurrentReplay }
    }

    /// Another call with the same key committed first; this one rolled back and answers with its result.
    func replayAfterRace<Response: ReplayableResponse>(
        _ call: IdempotentCall, as type: Response.Type
    ) async throws -> Response {
        guard let stored = try await storedResponse(of: call, as: type) else {
            throw GiftsError.aborted("a concurrent call with the same idempotency key did not finish; try again")
        }
        return stored
    }
}

/// A response stored for idempotent replay.
protocol ReplayableResponse: ProtoMessage {
    var replayed: Bool { get set }
}

extension GiftsV1.SendGiftsResponse: ReplayableResponse {}
extension GiftsV1.RequestGiftsResponse: ReplayableResponse {}

extension GiftsError {
    /// Thrown inside a send's transaction when another call with the same idempotency key committed first (earlier
    /// or concurrently); the transaction rolls back and the call answers with the stored result.
    static let concurrentReplay = GiftsError(code: .aborted, message: "a concurrent call used the same idempotency key")
}
