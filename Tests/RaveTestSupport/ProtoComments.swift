import Foundation
import RaveRuntime

/// Reads the documented range of a numeric field from the comment above it in `Proto/`.
///
/// The protocol documents each limit in the field's comment ("1…100; 0 means 25."); services declare the same
/// ranges in code, and their tests compare the two with this, so neither can change alone.
public enum ProtoComments {
    /// A documented range: the allowed values and what an unset (0) field stands for, if anything.
    public struct Range: Equatable, CustomStringConvertible, Sendable {
        public var lowerBound: Int64
        public var upperBound: Int64
        public var zeroMeans: Int64?

        public init(_ lowerBound: Int64, _ upperBound: Int64, zeroMeans: Int64? = nil) {
            self.lowerBound = lowerBound
            self.upperBound = upperBound
            self.zeroMeans = zeroMeans
        }

        public var description: String {
            "\(lowerBound)…\(upperBound)" + (zeroMeans.map { "; 0 means \($0)" } ?? "")
        }
    }

    /// Each declared range that is not what its field's proto comment says, described; empty when all agree.
    public static func disagreements(with declared: [(message: String, range: RequestRange)]) throws -> [String] {
        var disagreements: [String] = []
        for (message, range) in declared {
            let expected = Range(range.allowed.lowerBound, range.allowed.upperBound, zeroMeans: range.zeroMeans)
            let documented = try Self.range(message: message, field: range.field)
            if documented != expected {
                disagreements.append(
                    "\(message).\(range.field): declared \(expected), documented \(documented.map(\.description) ?? "nothing")"
                )
            }
        }
        return disagreements
    }

    /// The checkout's `Proto/` directory, found from this file's path.
    static let protoDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Proto")

    /// The range in the comment of `field` in the message `fullName` ("rave.identity.v1.GetRandomUsersRequest").
    ///
    /// The comment must start with "A…B" and may go on with "0 means N"; nil when the message, the field or such
    /// a comment is missing.
    public static func range(message fullName: String, field: String) throws -> Range? {
        let parts = fullName.split(separator: ".")
        guard parts.count >= 4 else { return nil }
        let area = parts[1]
        let messageName = String(parts[parts.count - 1])
        let directory = protoDirectory.appendingPathComponent("rave/\(area)/v1")
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        where file.hasSuffix(".proto") {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            if let comment = comment(of: field, inMessage: messageName, text: text) {
                return parse(comment)
            }
        }
        return nil
    }

    /// The comment lines right above `field` inside `message { … }`, joined.
    static func comment(of field: String, inMessage message: String, text: String) -> String? {
        var inMessage = false
        var depth = 0
        var comment: [String] = []
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if !inMessage {
                if line.hasPrefix("message \(message) ") || line == "message \(message) {" {
                    inMessage = true
                    depth = 1
                }
                continue
            }
            if line.hasPrefix("//") {
                comment.append(String(line.dropFirst(2)).trimmingCharacters(in: .whitespaces))
                continue
            }
            depth += line.filter { $0 == "{" }.count - line.filter { $0 == "}" }.count
            if depth <= 0 { return nil }
            let words = line.split(separator: " ")
            if depth == 1, let nameIndex = words.firstIndex(of: "="), nameIndex > 0, words[nameIndex - 1] == field {
                return comment.joined(separator: " ")
            }
            comment = []
        }
        return nil
    }

    static func parse(_ comment: String) -> Range? {
        let scanner = Scanner(string: comment)
        guard let lower = scanner.scanInt64(), scanner.scanString("…") != nil, let upper = scanner.scanInt64() else {
            return nil
        }
        var range = Range(lower, upper)
        if let zero = comment.range(of: "0 means ") {
            range.zeroMeans = Scanner(string: String(comment[zero.upperBound...])).scanInt64()
        }
        return range
    }
}
