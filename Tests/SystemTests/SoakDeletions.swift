import Foundation
import RaveMessages
import RaveRPC
import RaveTestSupport

/// Deletions under load, racing with the deleted players' own writes and with writes naming them.
///
/// Each round logs in a guest on a new device, funds it and lets it play the soak's mix (scores, bets, gifts to
/// the players) and ask the players for friendship; then support forces its deletion while the player keeps
/// playing, the operator deposits to it and a player sends it a friend request, and the player plays on with its
/// old token after. Whatever was acknowledged before the erasure, and whatever slipped in around it, must be gone
/// from every database afterwards, except the documented tombstones, and the ledger must still balance.
struct DeletionLoad: Sendable {
    struct Deletion: Sendable {
        var userID: String
        var deviceID: String
        var load: PlayerLoad
        /// Whether identity acknowledged the forced deletion (else `resolve()` forces it again).
        var forced: Bool
    }

    var caller: SoakCaller
    var appID: String
    /// Forces deletions and funds players (the admin certificate, through the gateway).
    var admin: RPCClient
    var deletions: [Deletion] = []
    var replayed = 0

    mutating func run(
        recipients: [SoakCaller], recipientIDs: [String], withGifts: Bool, until deadline: ContinuousClock.Instant
    ) async {
        while ContinuousClock.now < deadline {
            let deviceID = "soak-deleted-\(UUID().hex)"
            let device = IdentityV1.DeviceInfo(deviceId: deviceID, name: "soak", platform: "android")
            guard let login = try? await caller.identity.guestLogin(.init(appId: appID, device: device)),
                let userID = login.user?.profile?.userId
            else { continue }
            var deletion = Deletion(
                userID: userID, deviceID: deviceID, load: PlayerLoad(userID: userID, caller: caller.signedIn(login)),
                forced: false)
            try? await deposit(to: userID)
            for friend in recipientIDs.shuffled().prefix(2) { await deletion.load.askFriendship(of: friend) }
            deletion.load = await deletion.load.running(3, recipients: recipientIDs, withGifts: withGifts)

            // The erasure races with the player's calls, a deposit and a friend request naming the player.
            let (load, admin, reason) = (deletion.load, admin, "the player asked support to delete the account")
            async let forced = try? IdentityV1.IdentityAdminClient(caller: admin).forceAccountDeletion(
                .init(userId: userID, reason: reason))
            async let playing = load.running(4, recipients: recipientIDs, withGifts: withGifts)
            async let funded: Void? = try? deposit(to: userID)
            async let asked: Void? = try? recipients.randomElement()?.askFriendship(of: userID)
            deletion.forced = await forced != nil
            deletion.load = await playing
            _ = await (funded, asked)
            // The game has not noticed yet and plays on with the old token: every call is refused or changes nothing.
            deletion.load = await deletion.load.running(2, recipients: recipientIDs, withGifts: withGifts)
            deletions.append(deletion)
        }
    }

    /// Forces again every deletion whose answer a failure hid (a started or completed one is answered as it is).
    mutating func resolve() async throws {
        let identityAdmin = IdentityV1.IdentityAdminClient(caller: admin)
        for index in deletions.indices where !deletions[index].forced {
            replayed += 1
            let userID = deletions[index].userID
            _ = try await retrying {
                try await identityAdmin.forceAccountDeletion(.init(userId: userID, reason: "soak: force again"))
            }
            deletions[index].forced = true
        }
    }

    private func deposit(to user: String) async throws {
        _ = try await WalletV1.WalletAdminClient(caller: admin).deposit(
            .init(
                transfer: .init(
                    operationId: UUID().hex, userId: user, currency: "SOAK", economy: .sandbox, amount: "10.00",
                    reason: "soak deletion")))
    }
}

extension PlayerLoad {
    /// A friend request to `user`, whatever the answer (friendships are checked only through the deletions).
    func askFriendship(of user: String) async {
        _ = try? await caller.askFriendship(of: user)
    }
}

extension SoakCaller {
    /// A friend request to `user`.
    func askFriendship(of user: String) async throws {
        _ = try await SocialV1.SocialClient(caller: self).sendFriendRequest(
            .init(listKey: "friends", target: .init(key: .userId(user))))
    }
}

extension SoakChecks {
    /// Every forced deletion completed, and no database names a deleted player or its device, except the columns
    /// that keep an id by design (`DeletionStoryTests.idsKept`).
    mutating func deletions(_ load: DeletionLoad, stack: SystemStack) async throws {
        let identityAdmin = IdentityV1.IdentityAdminClient(caller: stack.admin)
        for deletion in load.deletions {
            counts["deletions", default: 0] += 1
            let completed: Void? = try? await eventually("deletion of \(deletion.userID)", timeout: .seconds(60)) {
                let page = try await identityAdmin.listAccountDeletions(.init(userId: deletion.userID))
                return page.deletions.first?.status == .completed
            }
            if completed == nil { problems.append("the deletion of \(deletion.userID) did not complete") }
            counts["deleted players' calls acknowledged", default: 0] +=
                deletion.load.acknowledgedScores
                + deletion.load.bets.count + deletion.load.gifts.count
        }
        let ids = load.deletions.map(\.userID)
        let devices = load.deletions.map(\.deviceID)
        guard !ids.isEmpty else { return }
        for service in stack.services {
            let database = try await stack.connect(to: service)
            defer { database.close() }
            let named = try await Leftovers.find(ids, in: database, allowed: DeletionStoryTests.idsKept[service] ?? [])
            if !named.isEmpty { problems.append("\(service) still names deleted players: \(named)") }
            let personal = try await Leftovers.find(devices, in: database)
            if !personal.isEmpty { problems.append("\(service) still names deleted players' devices: \(personal)") }
        }
    }
}
