import RaveGatewayRules

/// The front door's `GET` routes that are not one call each: an account export's archive, assembled by the gateway
/// from the download method's chunks (docs/gateway.md, "Downloading an account export").
extension OpenAPIGenerator {
    /// A download route: its path, the method whose chunks it joins, and its path parameters.
    struct Download {
        var path: String
        var method: String
        var operationID: String
        var summary: String
        var parameters: [String]
    }

    static let downloads = [
        Download(
            path: "/v1/account/exports/{export_id}/archive", method: "rave.identity.v1.Identity/DownloadAccountExport",
            operationID: "DownloadAccountExportArchive",
            summary: "The signed-in player's ready account export, as one JSON file.", parameters: ["export_id"]),
        Download(
            path: "/v1/admin/users/{user_id}/exports/{export_id}/archive",
            method: "rave.identity.v1.IdentityAdmin/DownloadUserExport", operationID: "DownloadUserExportArchive",
            summary: "A player's ready account export, as one JSON file, for an operator (support role).",
            parameters: ["user_id", "export_id"]),
    ]

    /// The path items of the downloads whose method the document has.
    func downloadPaths(methods: Set<String>) -> [(key: String, value: JSONValue)] {
        Self.downloads.filter { methods.contains($0.method) }.map { download in
            let access = MethodAccess(method: download.method)
            var parameters: [JSONValue] = download.parameters.map { name in
                [
                    "name": .string(name), "in": "path", "required": true,
                    "schema": ["type": "string", "pattern": "^[0-9a-f]{32}$"],
                ]
            }
            parameters.append(["$ref": "#/components/parameters/X-Request-Id"])
            parameters.append(["$ref": "#/components/parameters/X-Rave-Timeout-Ms"])
            var responses: [(key: String, value: JSONValue)] = [
                (
                    "200",
                    [
                        "description": .string(
                            "The archive (`rave.export.v1` format, docs/identity.md \"Exporting an account\") as an "
                                + "attachment `rave-export-<export_id>.json`; `ETag` is its SHA-256."),
                        "headers": [
                            "X-Request-Id": ["$ref": "#/components/headers/X-Request-Id"],
                            "ETag": [
                                "description": "The archive's SHA-256 (hex), quoted.", "schema": ["type": "string"],
                            ],
                            "Content-Disposition": [
                                "description": "`attachment; filename=\"rave-export-<export_id>.json\"`",
                                "schema": ["type": "string"],
                            ],
                        ],
                        "content": ["application/json": ["schema": ["type": "object"]]],
                    ]
                )
            ]
            // INVALID_ARGUMENT, DEADLINE_EXCEEDED, NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED,
            // FAILED_PRECONDITION (not ready, expired), UNAVAILABLE, UNAUTHENTICATED.
            let statuses = Set([3, 4, 5, 7, 8, 9, 14, 16].map { HTTPStatusMapping.httpStatus(ofCode: $0) })
            for status in statuses.sorted() {
                responses.append((String(status), ["$ref": .string("#/components/responses/\(status)")]))
            }
            responses.append(("default", ["$ref": "#/components/responses/default"]))
            let get: JSONValue = .members([
                ("operationId", .string(download.operationID)),
                ("tags", [.string(String(download.method.split(separator: "/")[0].split(separator: ".").last ?? ""))]),
                ("summary", .string(download.summary)),
                (
                    "description",
                    .string(
                        "Joins the chunks of `\(download.method)` (each call checked like a single call) into one "
                            + "response; a failing chunk answers its status with the `Error` body.")
                ),
                ("security", Self.security(access)),
                ("parameters", .array(parameters)),
                ("responses", .object(responses)),
                ("x-rave-method", .string(download.method)),
            ])
            return (download.path, ["get": get])
        }
    }
}
