import RaveRuntime

extension ServiceContext {
    /// The process's merged-users record: merged-away players resolve to their targets, and merges and erasures
    /// other processes apply are announced and swept here; it listens as a background service, so it starts
    /// before the RPC server (until then every id is resolved from the database).
    public func mergedUsers() -> MergedUsers {
        let merges = MergedUsers(pool: pool, loop: group.next(), logger: logger)
        addBackgroundService(merges)
        return merges
    }
}
