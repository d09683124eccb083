import RaveMessages
import RavePostgres
import RaveRPC

/// Share with gift: gifts attached to invitations sent through a social network, and install links.
extension PlayerHandlers {
    /// One invitation of the call, where it stands so far.
    private struct Candidate {
        var index: Int
        var invitation: ShareStore.Invitation
        /// The player already linked to the invited account, if any.
        var player: RaveID?
    }

    func attachGiftToInvitations(
        _ request: GiftsV1.AttachGiftToInvitationsRequest, context: RequestContext
    ) async throws -> GiftsV1.AttachGiftToInvitationsResponse {
        let player = try await dependencies.player(context)
        let key = try RequestLimits.giftTypeKey(request.giftTypeKey)
        let invitations = try Self.invitations(request.invitations)
        let type = try await dependencies.types.find(key, appID: player.appID)
        async let senderName = dependencies.directory.displayName(of: player.userID, appID: player.appID)
        let linked = try await dependencies.directory.linkedUsers(of: Array(Set(invitations.map(\.subject))))
        var statuses: [GiftsV1.InvitationStatus?] = []
        var candidates: [Candidate] = []
        var seen: Set<ShareStore.Invitation> = []
        for (index, invitation) in invitations.enumerated() {
            let user = linked[invitation.subject]
            if !seen.insert(invitation).inserted {
                statuses.append(.duplicate)
            } else if user == player.userID {
                statuses.append(.yourself)
            } else {
                statuses.append(nil)
                candidates.append(Candidate(index: index, invitation: invitation, player: user))
            }
        }
        let blocked = try await dependencies.directory.blockedPeers(
            of: player.userID, among: candidates.compactMap(\.player))
        candidates.removeAll { candidate in
            guard let user = candidate.player, blocked.contains(user) else { return false }
            statuses[candidate.index] = .blocked
            return true
        }
        let name = await senderName
        var giftIDs: [Int: RaveID] = [:]
        try await dependencies.pool.transaction { transaction in
            let attached = try await dependencies.shares.attach(
                type, from: player.userID, to: candidates.map(\.invitation), in: transaction)
            let fresh = candidates.filter { attached[$0.invitation] != nil }
            let allowed = try await dependencies.gifts.allowance(
                of: player.userID, for: type, wanted: fresh.count, in: transaction)
            try await dependencies.shares.remove(
                fresh.dropFirst(allowed).compactMap { attached[$0.invitation] }, in: transaction)
            let kept = fresh.prefix(allowed)
            // Contacts who already play get a normal gift now; the rest wait for their provider link.
            let players = kept.filter { $0.player != nil }
            let sent = try await dependencies.gifts.send(
                type, from: player.userID, senderName: name, to: players.compactMap(\.player), on: transaction)
            try await dependencies.shares.markDelivered(
                zip(players, sent).compactMap { candidate, gift in attached[candidate.invitation].map { ($0, gift) } },
                in: transaction)
            for (candidate, gift) in zip(players, sent) { giftIDs[candidate.index] = gift }
            for candidate in candidates where attached[candidate.invitation] == nil {
                statuses[candidate.index] = .duplicate
            }
            for candidate in fresh.dropFirst(allowed) { statuses[candidate.index] = .dailyLimit }
            for candidate in kept { statuses[candidate.index] = candidate.player == nil ? .pending : .sent }
        }
        let results = zip(request.invitations, statuses).enumerated().map { index, pair in
            GiftsV1.InvitationResult(
                invitation: pair.0, status: pair.1 ?? .pending, giftId: giftIDs[index]?.hex ?? "")
        }
        return GiftsV1.AttachGiftToInvitationsResponse(results: results)
    }

    func detachExternalGift(
        _ request: GiftsV1.DetachExternalGiftRequest, context: RequestContext
    ) async throws -> GiftsV1.DetachExternalGiftResponse {
        let player = try await dependencies.player(context)
        let requestID = try RequestLimits.externalID(request.requestId, field: "request_id")
        let (key, count) = try await dependencies.shares.detach(requestID: requestID, appID: player.appID)
        return GiftsV1.DetachExternalGiftResponse(giftTypeKey: key, detached: UInt32(clamping: count))
    }

    func createInstallLink(
        _ request: GiftsV1.CreateInstallLinkRequest, context: RequestContext
    ) async throws -> GiftsV1.CreateInstallLinkResponse {
        let player = try await dependencies.player(context)
        let key = try RequestLimits.giftTypeKey(request.giftTypeKey)
        guard request.requestId.utf8.count <= RequestLimits.externalIDLengths.upperBound else {
            throw GiftsError.invalidArgument("request_id must be at most 256 bytes")
        }
        guard request.channel.utf8.count <= RequestLimits.maximumChannelLength else {
            throw GiftsError.invalidArgument("channel must be at most \(RequestLimits.maximumChannelLength) bytes")
        }
        _ = try await dependencies.types.find(key, appID: player.appID)
        let code = try await dependencies.shares.createLink(
            appID: player.appID, creator: player.userID, giftTypeKey: key, requestID: request.requestId,
            channel: request.channel)
        return GiftsV1.CreateInstallLinkResponse(code: code)
    }

    /// 1…50 invitations of known providers.
    private static func invitations(
        _ invitations: [GiftsV1.ExternalInvitation]
    ) throws(GiftsError) -> [ShareStore.Invitation] {
        guard (1...RequestLimits.maximumInvitations).contains(invitations.count) else {
            throw .invalidArgument(
                "invitations must hold 1…\(RequestLimits.maximumInvitations) entries, got \(invitations.count)")
        }
        var parsed: [ShareStore.Invitation] = []
        for (index, invitation) in invitations.enumerated() {
            switch invitation.provider {
            case .google, .apple, .facebook: break
            default: throw .invalidArgument("invitations[\(index)].provider must be GOOGLE, APPLE or FACEBOOK")
            }
            let subject = try RequestLimits.externalID(
                invitation.externalUserId, field: "invitations[\(index)].external_user_id")
            let requestID = try RequestLimits.externalID(
                invitation.requestId, field: "invitations[\(index)].request_id")
            parsed.append(
                ShareStore.Invitation(
                    subject: ExternalSubject(provider: invitation.provider.rawValue, subject: subject),
                    requestID: requestID))
        }
        return parsed
    }
}
