import RaveRuntime

/// The ranges of identity's numeric request fields, as the proto comments state them; the tests compare the two.
enum RequestLimits {
    static let randomUsers = RequestRange("limit", 1...50)

    /// Every range above with the message whose field it checks.
    static let declaredRanges: [(message: String, range: RequestRange)] = [
        ("rave.identity.v1.GetRandomUsersRequest", randomUsers)
    ]
}
