import RaveMessages
import RavePostgres
import RaveRPC

/// Gift requests: ask up to 20 players for a requestable gift; the asked player grants or ignores, once.
extension PlayerHandlers {
    func requestGifts(
        _ request: GiftsV1.RequestGiftsRequest, context: RequestContext
    ) async throws -> GiftsV1.RequestGiftsResponse {
        let player = try await dependencies.player(context)
        let key = try RequestLimits.giftTypeKey(request.giftTypeKey)
        let recipients = try RequestLimits.recipients(request.recipientIds)
        let idempotencyKey = try RequestLimits.idempotencyKey(request.idempotencyKey, context: context)
        let call = idempotencyKey.map {
            IdempotentCall(
                sender: player.userID, operation: .requestGifts, key: $0,
                fingerprint: IdempotentCalls.fingerprint(giftTypeKey: key, recipients: request.recipientIds))
        }
        if let call, let stored = try await storedResponse(of: call, as: GiftsV1.RequestGiftsResponse.self) {
            return stored
        }
        let type = try await dependencies.types.find(key, appID: player.appID)
        guard type.requestable else {
            throw GiftsError.failedPrecondition("gift type \"\(key)\" cannot be requested; only requestable types can")
        }
        let screening = try await dependencies.screen(recipients, sender: player.userID, appID: player.appID)
        do {
            return try await dependencies.pool.transaction { transaction in
                let ids = try await dependencies.requests.request(
                    type, from: player.userID, requesterName: screening.senderName,
                    to: screening.eligible.map(\.user), in: transaction)
                let response = GiftsV1.RequestGiftsResponse(
                    results: Self.results(
                        request.recipientIds, screening: screening, sent: screening.eligible, ids: ids))
                if let call { try await record(call, response: response.protobufBytes(), in: transaction) }
                return response
            }
        } catch let error as GiftsError where error == .concurrentReplay {
            guard let call else { throw error }
            return try await replayAfterRace(call, as: GiftsV1.RequestGiftsResponse.self)
        }
    }

    func listGiftRequests(
        _ request: GiftsV1.ListGiftRequestsRequest, context: RequestContext
    ) async throws -> GiftsV1.ListGiftRequestsResponse {
        let player = try await dependencies.player(context)
        let limit = try RequestLimits.pageSize(request.pageSize)
        let cursor = try PageCursor.parse(request.pageToken)
        let (requests, next) = try await dependencies.requests.pending(
            to: player.userID, appID: player.appID, limit: limit, after: cursor)
        return GiftsV1.ListGiftRequestsResponse(requests: requests, nextPageToken: next?.token ?? "")
    }

    func getGiftRequestById(
        _ request: GiftsV1.GetGiftRequestByIdRequest, context: RequestContext
    ) async throws -> GiftsV1.GetGiftRequestByIdResponse {
        let player = try await dependencies.player(context)
        let id = try RequestLimits.id(request.requestId, field: "request_id")
        let found = try await dependencies.requests.request(id, appID: player.appID)
        guard found.requesterId == player.userID.hex || found.recipientId == player.userID.hex else {
            throw GiftsError.notFound("no gift request \(request.requestId) in this application")
        }
        return GiftsV1.GetGiftRequestByIdResponse(request: found)
    }

    func grantGiftRequest(
        _ request: GiftsV1.GrantGiftRequestRequest, context: RequestContext
    ) async throws -> GiftsV1.GrantGiftRequestResponse {
        let player = try await dependencies.player(context)
        let id = try RequestLimits.id(request.requestId, field: "request_id")
        async let name = dependencies.directory.displayName(of: player.userID, appID: player.appID)
        // A block made since the request refuses the grant, as it refuses a send. Social is asked before the
        // transaction (no lock held across a peer call), and the grant then insists on the requester checked here.
        let asked = try await dependencies.requests.request(id, appID: player.appID)
        var checkedRequester: RaveID?
        if asked.recipientId == player.userID.hex, asked.state == .pending, let requester = RaveID(asked.requesterId) {
            guard try await dependencies.directory.blockedPeers(of: player.userID, among: [requester]).isEmpty else {
                throw GiftsError.failedPrecondition(
                    "one of you blocked the other, so the gift request cannot be granted")
            }
            checkedRequester = requester
        }
        let (granted, gift) = try await dependencies.requests.grant(
            id, by: player.userID, granterName: await name, checkedRequester: checkedRequester, appID: player.appID)
        return GiftsV1.GrantGiftRequestResponse(request: granted, gift: gift)
    }

    func ignoreGiftRequest(
        _ request: GiftsV1.IgnoreGiftRequestRequest, context: RequestContext
    ) async throws -> GiftsV1.IgnoreGiftRequestResponse {
        let player = try await dependencies.player(context)
        let id = try RequestLimits.id(request.requestId, field: "request_id")
        return GiftsV1.IgnoreGiftRequestResponse(
            request: try await dependencies.requests.ignore(id, by: player.userID, appID: player.appID))
    }
}
