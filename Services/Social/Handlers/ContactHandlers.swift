import RaveMessages
import RavePostgres
import RaveRPC
import RaveRuntime

/// Contacts: players a user knows, from Rave itself, the phonebook, or a social network, matched to Rave users
/// through identity when possible.
extension PlayerHandlers {
    func addContactsByUsername(
        _ request: SocialV1.AddContactsByUsernameRequest, context: RequestContext
    ) async throws -> SocialV1.AddContactsByUsernameResponse {
        let player = try await dependencies.player(context)
        let range = 1...RequestLimits.maximumUsernamesPerCall
        guard range.contains(request.usernames.count) else {
            throw SocialError.invalidArgument(
                "usernames must hold 1…\(range.upperBound), got \(request.usernames.count)")
        }
        var results: [SocialV1.UsernameResult] = []
        var entries: [ContactEntry] = []
        for username in request.usernames {
            guard (1...64).contains(username.utf8.count) else {
                throw SocialError.invalidArgument("every username must be 1…64 bytes")
            }
            guard let profile = try await dependencies.directory.findUser(.username(username), appID: player.appID),
                profile.userID != player.userID
            else {
                results.append(SocialV1.UsernameResult(username: username))
                continue
            }
            let entry = ContactEntry(
                key: ContactEntry.key(userID: profile.userID, source: .rave, thirdParty: "", externalID: ""),
                userID: profile.userID, displayName: profile.displayName, pictureURL: profile.pictureURL, source: .rave,
                thirdParty: "", externalID: profile.userID.hex)
            entries.append(entry)
            results.append(SocialV1.UsernameResult(username: username, contact: Self.contact(entry)))
        }
        try await dependencies.contacts.add(entries, owner: player.userID)
        return SocialV1.AddContactsByUsernameResponse(results: results)
    }

    func addContactByEmail(
        _ request: SocialV1.AddContactByEmailRequest, context: RequestContext
    ) async throws -> SocialV1.AddContactByEmailResponse {
        let player = try await dependencies.player(context)
        guard (3...254).contains(request.email.utf8.count), request.email.contains("@") else {
            throw SocialError.invalidArgument("email must be an email address")
        }
        let name = try RequestLimits.contactName.check(request.displayName, field: "display_name")
        let external = SocialV1.ExternalContact(externalId: request.email, displayName: name)
        guard let entry = try await matchedEntries(source: .phonebook, thirdParty: "", [external], player: player).first
        else { throw SocialError.invalidArgument("email is the caller's own") }
        try await dependencies.contacts.add([entry], owner: player.userID)
        return SocialV1.AddContactByEmailResponse(contact: Self.contact(entry))
    }

    func deleteContact(
        _ request: SocialV1.DeleteContactRequest, context: RequestContext
    ) async throws -> SocialV1.DeleteContactResponse {
        let player = try await dependencies.player(context)
        guard (1...512).contains(request.key.utf8.count) else {
            throw SocialError.invalidArgument("key must be 1…512 bytes")
        }
        guard try await dependencies.contacts.delete(key: request.key, owner: player.userID) else {
            throw SocialError.notFound("no contact with key \"\(request.key.prefix(80))\"")
        }
        return SocialV1.DeleteContactResponse()
    }

    func syncContacts(
        _ request: SocialV1.SyncContactsRequest, context: RequestContext
    ) async throws -> SocialV1.SyncContactsResponse {
        let player = try await dependencies.player(context)
        let thirdParty = try Self.validateSource(request.source, thirdParty: request.thirdPartySource)
        let entries = try await matchedEntries(
            source: request.source, thirdParty: thirdParty, request.contacts, player: player)
        try await dependencies.contacts.replace(
            source: request.source, thirdParty: thirdParty, with: entries, owner: player.userID)
        return SocialV1.SyncContactsResponse(
            stored: UInt32(Set(entries.map(\.key)).count),
            matched: UInt32(Set(entries.compactMap(\.userID)).count))
    }

    func queryContacts(
        _ request: SocialV1.QueryContactsRequest, context: RequestContext
    ) async throws -> SocialV1.QueryContactsResponse {
        let player = try await dependencies.player(context)
        let limit = try RequestLimits.pageSize(request.limit)
        let offset = try RequestLimits.offset(request.offset)
        let records = try await filtered(
            try await dependencies.contacts.contacts(of: player.userID), filter: request.filter, player: player)
        let sorted = records.sorted { ($0.displayName.lowercased(), $0.key) < ($1.displayName.lowercased(), $1.key) }
        var page = Array(sorted.dropFirst(offset).prefix(limit))
        // Names and pictures of matched contacts come fresh from identity, as the calling app shows them.
        let fresh = try await dependencies.directory.profiles(of: page.compactMap(\.userID), appID: player.appID)
        for index in page.indices {
            if let id = page[index].userID, let profile = fresh[id] {
                page[index].displayName = profile.displayName
                page[index].pictureURL = profile.pictureURL
            }
        }
        return SocialV1.QueryContactsResponse(contacts: page.map(Self.contact), totalCount: UInt32(sorted.count))
    }

    func fetchExternalContacts(
        _ request: SocialV1.FetchExternalContactsRequest, context: RequestContext
    ) async throws -> SocialV1.FetchExternalContactsResponse {
        let player = try await dependencies.player(context)
        let thirdParty = try Self.validateSource(request.source, thirdParty: request.thirdPartySource)
        let entries = try await matchedEntries(
            source: request.source, thirdParty: thirdParty, request.contacts, player: player)
        var seen: Set<String> = []
        let records = entries.filter { seen.insert($0.key).inserted }.map {
            ContactRecord(
                key: $0.key, userID: $0.userID, displayName: $0.displayName, pictureURL: $0.pictureURL,
                sources: [$0.source], thirdParty: $0.thirdParty)
        }
        let kept = try await filtered(records, filter: request.filter, player: player)
        return SocialV1.FetchExternalContactsResponse(contacts: kept.map(Self.contact))
    }

    // MARK: - Matching and filtering

    /// The source's contacts as entries, matched to Rave users through identity; the caller's own is left out.
    private func matchedEntries(
        source: SocialV1.ContactSource, thirdParty: String, _ contacts: [SocialV1.ExternalContact],
        player: SocialDependencies.Player
    ) async throws -> [ContactEntry] {
        guard contacts.count <= RequestLimits.maximumContactsPerSync else {
            throw SocialError.invalidArgument(
                "contacts must hold at most \(RequestLimits.maximumContactsPerSync), got \(contacts.count)")
        }
        var identifiers: [ExternalIdentifier?] = []
        for (index, contact) in contacts.enumerated() {
            guard (1...256).contains(contact.externalId.utf8.count), contact.pictureUrl.utf8.count <= 2048 else {
                throw SocialError.invalidArgument(
                    "every contact needs an external_id of 1…256 bytes and a picture_url of at most 2048")
            }
            try RequestLimits.contactName.check(contact.displayName, field: "contacts[\(index)].display_name")
            identifiers.append(Self.identifier(source: source, externalID: contact.externalId))
        }
        let matches = try await dependencies.directory.match(Array(Set(identifiers.compactMap { $0 })))
        let matchedIDs = Array(Set(matches.values))
        let profiles = try await dependencies.directory.profiles(of: matchedIDs, appID: player.appID)
        var entries: [ContactEntry] = []
        for (contact, identifier) in zip(contacts, identifiers) {
            let userID = identifier.flatMap { matches[$0] }
            if userID == player.userID { continue }
            let profile = userID.flatMap { profiles[$0] }
            entries.append(
                ContactEntry(
                    key: ContactEntry.key(
                        userID: userID, source: source, thirdParty: thirdParty, externalID: contact.externalId),
                    userID: userID, displayName: profile?.displayName ?? contact.displayName,
                    pictureURL: profile?.pictureURL ?? contact.pictureUrl, source: source, thirdParty: thirdParty,
                    externalID: source == .phonebook ? contact.externalId.lowercased() : contact.externalId))
        }
        return entries
    }

    /// What identity can match: provider subjects, and emails from the phonebook (phone numbers stay unmatched).
    private static func identifier(source: SocialV1.ContactSource, externalID: String) -> ExternalIdentifier? {
        switch source {
        case .facebook: .subject(.facebook, externalID)
        case .google: .subject(.google, externalID)
        case .phonebook: externalID.contains("@") ? .email(externalID.lowercased()) : nil
        default: nil
        }
    }

    private func filtered(
        _ records: [ContactRecord], filter: SocialV1.ContactFilter, player: SocialDependencies.Player
    ) async throws -> [ContactRecord] {
        switch filter {
        case .all: return records
        case .usingApplication, .notUsingApplication:
            let players = try await dependencies.directory.users(
                among: Array(Set(records.compactMap(\.userID))), whoPlayed: player.appID)
            let wanted = filter == .usingApplication
            return records.filter { record in (record.userID.map(players.contains) ?? false) == wanted }
        case .unrecognized(let value): throw SocialError.invalidArgument("filter \(value) is not known")
        }
    }

    /// The third party's name when the source is a third party; sources that cannot be synced are refused.
    private static func validateSource(
        _ source: SocialV1.ContactSource, thirdParty: String
    ) throws(SocialError) -> String {
        switch source {
        case .facebook, .google, .phonebook:
            guard thirdParty.isEmpty else {
                throw .invalidArgument("third_party_source is only for CONTACT_SOURCE_THIRD_PARTY")
            }
            return ""
        case .thirdParty:
            guard (1...64).contains(thirdParty.utf8.count) else {
                throw .invalidArgument("third_party_source must be 1…64 bytes for a third-party source")
            }
            return thirdParty
        case .rave, .unspecified, .unrecognized:
            throw .invalidArgument("source must be facebook, google, phonebook or third party")
        }
    }

    private static func contact(_ entry: ContactEntry) -> SocialV1.Contact {
        SocialV1.Contact(
            key: entry.key, userId: entry.userID?.hex ?? "", displayName: entry.displayName,
            pictureUrl: entry.pictureURL, sources: [entry.source], thirdPartySource: entry.thirdParty)
    }

    private static func contact(_ record: ContactRecord) -> SocialV1.Contact {
        SocialV1.Contact(
            key: record.key, userId: record.userID?.hex ?? "", displayName: record.displayName,
            pictureUrl: record.pictureURL, sources: record.sources, thirdPartySource: record.thirdParty)
    }
}
