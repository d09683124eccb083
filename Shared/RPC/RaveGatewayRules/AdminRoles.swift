/// What an operator account may do: each role includes every role before it (docs/identity.md, "Operators").
public enum OperatorRole: Int, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Reads only.
    case viewer = 1
    /// Player support: bans, sessions, two-factor resets.
    case support = 2
    /// Game content and money: leaderboards, achievements, gift types, push templates, wallet games and funds.
    case `operator` = 3
    /// Publishers, applications and operators.
    case owner = 4

    /// The role's name as tokens, metadata and the audit log spell it.
    public var description: String {
        switch self {
        case .viewer: "viewer"
        case .support: "support"
        case .operator: "operator"
        case .owner: "owner"
        }
    }

    /// The role named `name` ("viewer", …); nil for anything else.
    public init?(name: String) {
        guard let role = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = role
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// The least operator role allowed to call each admin method: the one table of it, read by the gateway (which
/// refuses a call whose operator's role is lower) and by identity (which checks its own admin methods again).
///
/// Every `<Area>Admin` method of Proto/ is listed by name, so a new admin method is refused to every operator until
/// it is classified here (the admin certificate still reaches it), and `AdminRolesTests` fails until it is. A
/// method whose least role is `viewer` only reads, and so do `readsAboveViewer`; every other is a write: the gateway requires a reason
/// (`rave-reason`) of operators for it and records it in identity's audit log (`selfAudited` methods are recorded by
/// identity itself, with the state before and after, in the change's own transaction).
public enum AdminRoles {
    /// Method → least role.
    public static let leastRole: [String: OperatorRole] = [
        // Reads.
        "rave.identity.v1.IdentityAdmin/GetApplication": .viewer,
        "rave.identity.v1.IdentityAdmin/GetMergeStatus": .viewer,
        "rave.identity.v1.IdentityAdmin/GetUser": .viewer,
        "rave.identity.v1.IdentityAdmin/ListAuditEvents": .viewer,
        "rave.identity.v1.IdentityAdmin/ListAccountDeletions": .viewer,
        "rave.identity.v1.IdentityAdmin/SearchUsers": .viewer,
        "rave.identity.v1.IdentityAdmin/ListUserSessions": .viewer,
        "rave.identity.v1.IdentityAdmin/GetUserExport": .viewer,
        "rave.gateway.v1.GatewayAdmin/GetSystemStatus": .viewer,
        "rave.gifts.v1.GiftsAdmin/ListGiftTypes": .viewer,
        "rave.gifts.v1.GiftsAdmin/GetGiftType": .viewer,
        "rave.push.v1.PushAdmin/GetDeliveries": .viewer,
        "rave.push.v1.PushAdmin/ListTemplates": .viewer,
        "rave.social.v1.SocialAdmin/GetLists": .viewer,
        "rave.wallet.v1.WalletAdmin/GetUserWallet": .viewer,
        // Reads behind the console's lists and a player's page.
        "rave.identity.v1.IdentityAdmin/ListMerges": .viewer,
        "rave.identity.v1.IdentityAdmin/ListPublishers": .viewer,
        "rave.identity.v1.IdentityAdmin/ListApplications": .viewer,
        "rave.identity.v1.IdentityAdmin/ListMailTemplates": .viewer,
        "rave.gifts.v1.GiftsAdmin/ListUserGifts": .viewer,
        "rave.leaderboards.v1.LeaderboardsAdmin/ListLeaderboards": .viewer,
        "rave.leaderboards.v1.LeaderboardsAdmin/GetTopScores": .viewer,
        "rave.leaderboards.v1.LeaderboardsAdmin/GetUserStanding": .viewer,
        "rave.leaderboards.v1.LeaderboardsAdmin/ListAchievements": .viewer,
        "rave.push.v1.PushAdmin/ListUserDevices": .viewer,
        "rave.social.v1.SocialAdmin/GetUserCounts": .viewer,
        "rave.wallet.v1.WalletAdmin/ListCurrencies": .viewer,
        "rave.wallet.v1.WalletAdmin/ListGames": .viewer,
        "rave.wallet.v1.WalletAdmin/ListUserTransactions": .viewer,
        "rave.wallet.v1.WalletAdmin/GetEligibility": .viewer,
        // Player support.
        "rave.identity.v1.IdentityAdmin/BanUser": .support,
        "rave.identity.v1.IdentityAdmin/UnbanUser": .support,
        "rave.identity.v1.IdentityAdmin/RevokeUserSessions": .support,
        "rave.identity.v1.IdentityAdmin/ResetTwoFactor": .support,
        "rave.identity.v1.IdentityAdmin/RetryMergeParticipant": .support,
        // A player's request to be deleted, or its withdrawal, handled by support.
        "rave.identity.v1.IdentityAdmin/ForceAccountDeletion": .support,
        "rave.identity.v1.IdentityAdmin/CancelAccountDeletion": .support,
        // A player's data export, asked for and handed over by support (each call recorded: it reads personal data);
        // its status alone (GetUserExport) is a viewer's read.
        "rave.identity.v1.IdentityAdmin/RequestUserExport": .support,
        "rave.identity.v1.IdentityAdmin/DownloadUserExport": .support,
        // Game content and money.
        "rave.identity.v1.IdentityAdmin/SetMailTemplate": .operator,
        "rave.gifts.v1.GiftsAdmin/CreateGiftType": .operator,
        "rave.gifts.v1.GiftsAdmin/UpdateGiftType": .operator,
        "rave.leaderboards.v1.LeaderboardsAdmin/DefineLeaderboard": .operator,
        "rave.leaderboards.v1.LeaderboardsAdmin/DefineAchievement": .operator,
        "rave.leaderboards.v1.LeaderboardsAdmin/RebuildIndex": .operator,
        "rave.push.v1.PushAdmin/SendNotification": .operator,
        "rave.push.v1.PushAdmin/SetTemplate": .operator,
        "rave.push.v1.PushAdmin/DeleteTemplate": .operator,
        "rave.push.v1.PushAdmin/SetDefaultLanguage": .operator,
        "rave.social.v1.SocialAdmin/CreateList": .operator,
        "rave.wallet.v1.WalletAdmin/CreateCurrency": .operator,
        "rave.wallet.v1.WalletAdmin/CreateGame": .operator,
        "rave.wallet.v1.WalletAdmin/SetEligibility": .operator,
        "rave.wallet.v1.WalletAdmin/Deposit": .operator,
        "rave.wallet.v1.WalletAdmin/Withdraw": .operator,
        "rave.wallet.v1.WalletAdmin/Adjust": .operator,
        // Publishers, applications and operators.
        "rave.identity.v1.IdentityAdmin/CreatePublisher": .owner,
        "rave.identity.v1.IdentityAdmin/UpdatePublisher": .owner,
        "rave.identity.v1.IdentityAdmin/CreateApplication": .owner,
        "rave.identity.v1.IdentityAdmin/UpdateApplication": .owner,
        "rave.identity.v1.IdentityAdmin/CreateOperator": .owner,
        "rave.identity.v1.IdentityAdmin/ListOperators": .owner,
        "rave.identity.v1.IdentityAdmin/SetOperatorRole": .owner,
        "rave.identity.v1.IdentityAdmin/DisableOperator": .owner,
    ]

    /// Reads kept from roles below their least role (another operator's email and role is the owner's business):
    /// they need no reason and are not recorded, like every other read.
    public static let readsAboveViewer: Set<String> = ["rave.identity.v1.IdentityAdmin/ListOperators"]

    /// Writes identity records in its own audit log, in the transaction of the change and with the state before and
    /// after: the gateway does not record them a second time.
    public static let selfAudited: Set<String> = [
        "rave.identity.v1.IdentityAdmin/BanUser", "rave.identity.v1.IdentityAdmin/UnbanUser",
        "rave.identity.v1.IdentityAdmin/CreateOperator", "rave.identity.v1.IdentityAdmin/SetOperatorRole",
        "rave.identity.v1.IdentityAdmin/DisableOperator", "rave.identity.v1.IdentityAdmin/ForceAccountDeletion",
        "rave.identity.v1.IdentityAdmin/CancelAccountDeletion",
    ]

    /// The least role for `method`; nil when the method is not classified (no operator may call it).
    public static func role(for method: String) -> OperatorRole? { leastRole[method] }

    /// True when `method` changes something: its least role is above `viewer` and it is not one of
    /// `readsAboveViewer`.
    public static func isWrite(_ method: String) -> Bool {
        (leastRole[method] ?? .owner) > .viewer && !readsAboveViewer.contains(method)
    }

    /// Nil when an operator of `role` may call `method`, else why not (for PERMISSION_DENIED).
    public static func refusal(method: String, role: OperatorRole) -> String? {
        guard let least = leastRole[method] else {
            return "\(method) is not open to operator accounts (no role is assigned to it); use the admin certificate"
        }
        guard role >= least else {
            return "\(method) needs the operator role \(least) or higher; this operator's role is \(role)"
        }
        return nil
    }
}
