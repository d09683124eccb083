import RavePostgres

/// A provider account of someone who may not play yet: the provider (`IdentityV1.Provider` raw value) and the
/// provider's user id.
package struct ExternalSubject: Hashable, Sendable {
    var provider: Int32
    var subject: String
}

/// What gifts needs to know about players; identity and social answer it in production (`PeerDirectory`).
package protocol PlayerDirectory: Sendable {
    /// The canonical id of each known user among `ids` (a merged-away user resolves to its target); unknown
    /// users are missing from the result.
    func canonicalIDs(of ids: [RaveID]) async throws -> [RaveID: RaveID]
    /// `user`'s display name in `appID`, "" when there is none (names only decorate events).
    func displayName(of user: RaveID, appID: RaveID) async -> String
    /// The users among `others` that `user` blocked or that blocked `user`.
    func blockedPeers(of user: RaveID, among others: [RaveID]) async throws -> Set<RaveID>
    /// Players already linked to these provider subjects.
    func linkedUsers(of subjects: [ExternalSubject]) async throws -> [ExternalSubject: RaveID]
}
