import RaveMessages

extension UserExport {
    /// The request's fields, checked (`init(exportID:userID:mergedUserIDs:cursor:)`).
    public init(_ request: ExportV1.ExportUserRequest) throws(ExportError) {
        try self.init(
            exportID: request.exportId, userID: request.userId, mergedUserIDs: request.mergedUserIds,
            cursor: request.cursor)
    }
}

extension ExportV1.ExportUserResponse {
    /// The page as the participant answers it.
    public init(_ page: ExportPage) {
        self.init(
            sections: page.sections.map { ExportV1.ExportSection(name: $0.name, records: $0.records) },
            nextCursor: page.nextCursor)
    }
}

extension MergedUsers {
    /// Answers `rave.export.v1.ExportParticipant/ExportUser` for a service whose export is `sections`: the request
    /// checked (INVALID_ARGUMENT in our words), then one page read in one snapshot; it changes nothing.
    public func exportUser(
        _ request: ExportV1.ExportUserRequest, sections: [ExportSection]
    ) async throws -> ExportV1.ExportUserResponse {
        ExportV1.ExportUserResponse(try await exportPage(UserExport(request), of: sections))
    }
}
