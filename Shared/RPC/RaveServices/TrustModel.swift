/// Who may call what between the gateway and the services: the project's one table of it (docs/OPERATIONS.md,
/// "Trust model", shows the same table).
///
/// Public and admin service blocks are called only by the gateway, which has already checked the player's token
/// or the operator's credential and says who calls in `rave-caller-*` metadata. Internal blocks are called only
/// by the services that need them. Only the gateway may assert a caller. The admin and client roles reach nothing
/// on a service port.
public enum TrustModel {
    /// The services that call each internal block; every block not named here is the gateway's alone.
    public static let internalCallers: [String: Set<PeerRole>] = [
        // Signing keys and merge resolution (gateway); profiles, lookups and applications (the data services).
        IdentityV1.IdentityInternalClient.serviceName: [
            .gateway, .service("social"), .service("leaderboards"), .service("gifts"), .service("wallet"),
        ],
        // Blocks (identity's FindUser, gifts' sends) and friends (leaderboards' friends boards).
        SocialV1.SocialInternalClient.serviceName: [.service("identity"), .service("leaderboards"), .service("gifts")],
        // Board owners, for routing by board.
        LeaderboardsV1.LeaderboardsInternalClient.serviceName: [.gateway],
        // Notifications on behalf of a feature of another service.
        PushV1.PushInternalClient.serviceName: [
            .service("identity"), .service("social"), .service("leaderboards"), .service("gifts"), .service("wallet"),
        ],
        // The merge saga: identity alone drives it.
        MergeV1.MergeParticipantClient.serviceName: [.service("identity")],
        // The deletion saga: identity alone drives it too.
        ErasureV1.ErasureParticipantClient.serviceName: [.service("identity")],
        // Account exports: identity's export worker assembles every participant's pages.
        ExportV1.ExportParticipantClient.serviceName: [.service("identity")],
        // Domain events, from the services that publish them (docs/events.md).
        EventsV1.EventSinkClient.serviceName: [
            .service("identity"), .service("social"), .service("leaderboards"), .service("gifts"),
        ],
    ]

    /// Internal methods whose callers differ from their block's: they win over `internalCallers`.
    public static let internalMethodCallers: [String: Set<PeerRole>] = [
        // Which publisher an application belongs to: the data services' checks of an operator's publisher scope
        // (`AdminScope`, docs/identity.md "Publisher scope"), push's only call to identity; the gateway never asks.
        "\(IdentityV1.IdentityInternalClient.serviceName)/GetApplications": [
            .service("social"), .service("leaderboards"), .service("gifts"), .service("push"), .service("wallet"),
        ],
        // Every application's allowed web origins, for the gateway's CORS checks; no data service needs them.
        "\(IdentityV1.IdentityInternalClient.serviceName)/ListAllowedOrigins": [.gateway],
        // The audit log of admin writes the gateway records before it forwards them (docs/identity.md, "Audit log").
        "\(IdentityV1.IdentityInternalClient.serviceName)/BeginAdminCall": [.gateway],
        "\(IdentityV1.IdentityInternalClient.serviceName)/FinishAdminCall": [.gateway],
    ]

    /// The policy of every backend service's port.
    public static let backend = AccessPolicy(
        services: internalCallers.mapValues { .roles($0) }, methods: internalMethodCallers.mapValues { .roles($0) },
        otherwise: .roles([.gateway]), callerMetadataFrom: [.gateway])
}
