import Foundation
import RaveRuntime

/// The files the front door serves as they were at start-up (`RAVE_GATEWAY_HTTP_STATIC`, docs/gateway.md "Static
/// files"): the demo game and the browser SDK.
///
/// Every file is read once, so a request can only ever reach a file that was there at start, by its exact path:
/// no path is resolved against the file system per request, so `..`, encoded separators or symbolic links made
/// later lead nowhere. Symbolic links are not followed while loading either; names must be visible ASCII and not
/// start with a dot.
struct StaticFiles: Sendable {
    /// One `prefix=directory` entry of the setting.
    struct Mount: Sendable, Hashable {
        /// The URL path prefix, starting and ending with "/" ("/demo/").
        var prefix: String
        var directory: String
    }

    struct File: Sendable, Hashable {
        var body: [UInt8]
        var contentType: String
    }

    /// Largest file loaded.
    static let maxFileBytes = 4 << 20
    /// Most bytes loaded in all.
    static let maxTotalBytes = 64 << 20

    /// Files by URL path ("/demo/index.html").
    let files: [String: File]
    /// The mounted prefixes, for telling "not here" (404) from "not a static path".
    let prefixes: [String]

    init(files: [String: File] = [:], prefixes: [String] = []) {
        self.files = files
        self.prefixes = prefixes
    }

    /// Whether `path` is under a mounted prefix.
    func covers(_ path: Substring) -> Bool {
        prefixes.contains { path.hasPrefix($0) }
    }

    /// The file a GET of `path` serves: the file itself, or `index.html` for a path ending in "/".
    func file(at path: Substring) -> File? {
        path.hasSuffix("/") ? files[path + "index.html"] : files[String(path)]
    }

    // MARK: - Loading

    /// Parses the setting: comma-separated `/prefix/=directory` (empty: nothing mounted).
    static func mounts(parsing text: String, variable: String) throws(RuntimeError) -> [Mount] {
        var mounts: [Mount] = []
        for entry in text.split(separator: ",") {
            let parts = entry.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, parts[0].hasPrefix("/"), parts[0].hasSuffix("/"), !parts[1].isEmpty,
                !parts[0].hasPrefix("/v1/")
            else {
                throw .invalidValue(
                    variable, text, allowed: "comma-separated /prefix/=directory entries, like /demo/=Clients/demo")
            }
            mounts.append(Mount(prefix: parts[0], directory: parts[1]))
        }
        return mounts
    }

    /// Reads every file under the mounts; a directory that does not exist mounts nothing (reported in `missing`).
    ///
    /// Throws when a file is over `maxFileBytes` or all of them over `maxTotalBytes`: an operator's mistake worth
    /// stopping for.
    static func load(_ mounts: [Mount]) throws(RuntimeError) -> (files: StaticFiles, missing: [String]) {
        var files: [String: File] = [:]
        var missing: [String] = []
        var total = 0
        for mount in mounts {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: mount.directory, isDirectory: &isDirectory),
                isDirectory.boolValue
            else {
                missing.append(mount.directory)
                continue
            }
            try collect(directory: mount.directory, urlPath: mount.prefix, into: &files, total: &total)
        }
        return (StaticFiles(files: files, prefixes: mounts.map(\.prefix)), missing)
    }

    private static func collect(
        directory: String, urlPath: String, into files: inout [String: File], total: inout Int
    ) throws(RuntimeError) {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw RuntimeError(.startupFailed, "cannot list static files in \(directory): \(error)")
        }
        for name in names where isServableName(name) {
            let path = directory + "/" + name
            // attributesOfItem does not follow a symbolic link: the link itself is seen, and skipped.
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                let type = attributes[.type] as? FileAttributeType
            else { continue }
            if type == .typeDirectory {
                try collect(directory: path, urlPath: urlPath + name + "/", into: &files, total: &total)
                continue
            }
            guard type == .typeRegular else { continue }
            let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
            guard size <= maxFileBytes else {
                throw RuntimeError(
                    .startupFailed, "static file \(path) is \(size) bytes; at most \(maxFileBytes) are served")
            }
            guard let data = FileManager.default.contents(atPath: path) else {
                throw RuntimeError(.startupFailed, "cannot read static file \(path)")
            }
            total += data.count
            guard data.count <= maxFileBytes, total <= maxTotalBytes else {
                throw RuntimeError(
                    .startupFailed, "static files exceed \(maxTotalBytes) bytes in all (at \(path))")
            }
            files[urlPath + name] = File(body: Array(data), contentType: contentType(of: name))
        }
    }

    /// Visible ASCII and not hidden (".git", ".DS_Store").
    static func isServableName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && name.utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7E }
    }

    /// The content type of a file by its extension.
    static func contentType(of name: String) -> String {
        let dot = name.lastIndex(of: ".").map { name[name.index(after: $0)...].lowercased() } ?? ""
        return contentTypes[dot] ?? "application/octet-stream"
    }

    private static let contentTypes: [String: String] = [
        "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8",
        "mjs": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
        "json": "application/json", "map": "application/json", "txt": "text/plain; charset=utf-8",
        "svg": "image/svg+xml", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "ico": "image/x-icon", "wasm": "application/wasm", "woff2": "font/woff2",
        "woff": "font/woff", "ttf": "font/ttf", "mp3": "audio/mpeg", "ogg": "audio/ogg", "wav": "audio/wav",
        "d.ts": "text/plain; charset=utf-8",
    ]
}
