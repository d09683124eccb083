import Foundation
import Testing

/// The layout every executable follows (docs/ARCHITECTURE.md, "Anatomy of a service"), checked by reading the
/// source tree: the same root files, folders from one set, SQL only in stores, settings read only by the
/// configuration, the merge participant and the composition root named alike everywhere.
///
/// The benchmark folders are left out: they are tools, not part of a service's anatomy.
@Suite("Anatomy of a service")
struct AnatomyTests {
    static let dataServices = ["Identity", "Social", "Leaderboards", "Gifts", "Push", "Wallet"]
    static let executables = dataServices + ["Gateway"]

    /// The one folder a data service may have for what only it has.
    static let ownFolder = ["Identity": "Crypto", "Leaderboards": "Engine", "Push": "Delivery", "Wallet": "Engine"]

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    static func directory(_ name: String) -> URL {
        repository.appendingPathComponent("Services").appendingPathComponent(name)
    }

    /// The entries directly under `Services/<name>`: Swift files and folders (benchmarks live in `Benchmarks/`, so a
    /// benchmark folder here is an unexpected folder).
    static func root(of name: String) throws -> (files: Set<String>, folders: Set<String>) {
        var files: Set<String> = []
        var folders: Set<String> = []
        for entry in try FileManager.default.contentsOfDirectory(atPath: directory(name).path) {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(
                atPath: directory(name).appendingPathComponent(entry).path, isDirectory: &isFolder)
            if isFolder.boolValue {
                folders.insert(entry)
            } else if entry.hasSuffix(".swift") {
                files.insert(entry)
            }
        }
        return (files, folders)
    }

    /// Every Swift file of the service, by path relative to `Services/<name>`.
    static func sources(of name: String) throws -> [(path: String, text: String)] {
        let base = directory(name)
        guard let walker = FileManager.default.enumerator(atPath: base.path) else { return [] }
        var found: [(path: String, text: String)] = []
        while let path = walker.nextObject() as? String {
            guard path.hasSuffix(".swift") else { continue }
            found.append((path, try String(contentsOf: base.appendingPathComponent(path), encoding: .utf8)))
        }
        return found.sorted { $0.path < $1.path }
    }

    @Test(arguments: executables)
    func everyExecutableHasTheSameRootFiles(_ name: String) throws {
        var expected: Set<String> = ["\(name)Main.swift", "\(name)Dependencies.swift", "\(name)Configuration.swift"]
        // The gateway relays statuses as RPCError; every data service has an error type of its own.
        if name != "Gateway" { expected.insert("\(name)Error.swift") }
        // What the service's benchmark calls in-process (leaderboards' benchmark needs only public types).
        if name != "Leaderboards" { expected.insert("PackageInterface.swift") }
        #expect(try Self.root(of: name).files == expected)
    }

    @Test(arguments: executables)
    func foldersComeFromTheFixedSet(_ name: String) throws {
        var allowed: Set<String>
        if name == "Gateway" {
            allowed = ["Main", "Handlers", "Routing", "Auth", "Protection", "Batch", "HTTP"]
        } else {
            allowed = ["Main", "Handlers", "Domain", "Store", "Migrations", "Peers"]
            if let own = Self.ownFolder[name] { allowed.insert(own) }
        }
        let folders = try Self.root(of: name).folders
        #expect(folders.isSubset(of: allowed), "unexpected folders: \(folders.subtracting(allowed).sorted())")
        #expect(folders.contains("Handlers"))
        // The executable is a single file that starts the library.
        let main = try FileManager.default.contentsOfDirectory(
            atPath: Self.directory(name).appendingPathComponent("Main").path)
        #expect(main == ["main.swift"])
    }

    @Test(arguments: executables)
    func theCompositionRootIsNamedDependencies(_ name: String) throws {
        let text = try Self.sources(of: name).first { $0.path == "\(name)Dependencies.swift" }?.text ?? ""
        #expect(
            text.contains("final class \(name)Dependencies: Sendable") || text.contains("struct \(name)Dependencies:"))
        if name != "Gateway" { #expect(text.contains("var rpcServices: [any RPCService]")) }
    }

    /// The services whose own code acts on a refusal's kind (push, wallet); the others hold the status code itself.
    static let kindDecidesTheStatus: Set<String> = ["Push", "Wallet"]

    @Test(arguments: dataServices)
    func theErrorFileHoldsTheErrorTypeAndTheRequestLimits(_ name: String) throws {
        let text = try Self.sources(of: name).first { $0.path == "\(name)Error.swift" }?.text ?? ""
        let shape = Self.kindDecidesTheStatus.contains(name) ? "StatusError" : "StatusCodeError"
        #expect(text.contains("struct \(name)Error: \(shape) {"))
        #expect(text.contains("enum RequestLimits"))
    }

    /// Refusals become statuses in one place, `StatusError.rpcError`: no service writes that mapping again.
    @Test(arguments: dataServices)
    func noServiceMapsItsErrorsToStatusesItself(_ name: String) throws {
        for source in try Self.sources(of: name) {
            #expect(!source.text.contains("var rpcError"), "\(name)/\(source.path) maps its errors itself")
            #expect(!source.text.contains("RPCStatusConvertible"), "\(name)/\(source.path) maps its errors itself")
        }
    }

    @Test(arguments: dataServices)
    func handlersThrowTheServicesOwnError(_ name: String) throws {
        for source in try Self.sources(of: name) {
            #expect(!source.text.contains("throw RPCError."), "\(name)/\(source.path) throws RPCError directly")
        }
    }

    @Test(arguments: dataServices)
    func theMergeParticipantIsNamedForItsService(_ name: String) throws {
        let participants = try Self.sources(of: name).filter {
            $0.text.contains(": MergeV1.MergeParticipantHandler")
        }
        // Identity runs merges (its saga) and takes part in none.
        guard name != "Identity" else {
            #expect(participants.isEmpty)
            return
        }
        #expect(participants.map(\.path) == ["Handlers/\(name)MergeParticipant.swift"])
        #expect(participants.first?.text.contains("\(name)MergeParticipant: MergeV1.MergeParticipantHandler") == true)
    }

    /// A handler is named for the service block it serves (docs/ARCHITECTURE.md, "Anatomy of a service"): the
    /// player block `<Name>` is `PlayerHandlers`, a block `<Name><Block>` is `<Block>Handlers` (`AdminHandlers`,
    /// `InternalHandlers`, gifts' `InstallHandlers`), a block every service serves (`MergeParticipant`, `EventSink`,
    /// …) is `<Name><Block>`; each is declared in `Handlers/<type>.swift`.
    @Test(arguments: dataServices)
    func handlersAreNamedForTheBlockTheyServe(_ name: String) throws {
        let conformance = try Regex(#"(?:struct|final class) (\w+): \w+V1\.(\w+)Handler\b"#)
        var handlers: [String] = []
        for source in try Self.sources(of: name) {
            for match in source.text.matches(of: conformance) {
                let type = String(match.output[1].substring ?? "")
                let block = String(match.output[2].substring ?? "")
                let expected =
                    block.hasPrefix(name)
                    ? (block == name ? "Player" : String(block.dropFirst(name.count))) + "Handlers" : name + block
                #expect(type == expected, "\(name)/\(source.path): the handler of \(block) is named \(type)")
                #expect(source.path == "Handlers/\(type).swift", "\(name): \(type) is declared in \(source.path)")
                handlers.append(type)
            }
        }
        #expect(handlers.contains("PlayerHandlers"))
    }

    @Test(arguments: executables)
    func sqlLivesOnlyInStores(_ name: String) throws {
        let sql = try Regex(#"^\s*"*\s*(SELECT|INSERT INTO|DELETE FROM|UPDATE [a-z_]+ (?:[a-z]+ )?SET)\b"#)
        for source in try Self.sources(of: name) where !source.path.hasPrefix("Store/") {
            #expect(!source.text.contains("PostgresStatement("), "\(name)/\(source.path) declares a statement")
            for line in source.text.split(separator: "\n") {
                #expect(line.firstMatch(of: sql) == nil, "\(name)/\(source.path): \(line)")
            }
        }
    }

    @Test(arguments: executables)
    func onlyTheConfigurationReadsTheEnvironment(_ name: String) throws {
        for source in try Self.sources(of: name) where source.path != "\(name)Configuration.swift" {
            #expect(!source.text.contains("environment["), "\(name)/\(source.path) reads a setting itself")
        }
    }
}
