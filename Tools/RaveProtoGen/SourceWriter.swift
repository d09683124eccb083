/// Accumulates generated Swift source with four-space indentation.
struct SourceWriter {
    private(set) var text = ""
    private var depth = 0

    /// Writes one line at the current indentation (an empty line stays empty).
    mutating func line(_ line: String = "") {
        text += line.isEmpty ? "\n" : String(repeating: "    ", count: depth) + line + "\n"
    }

    /// Writes `opener` and indents what follows, until `close`.
    mutating func open(_ opener: String) {
        line(opener)
        depth += 1
    }

    /// Ends one block and starts the next at the same level ("} else {").
    mutating func continueBlock(_ line: String) {
        depth -= 1
        self.line(line)
        depth += 1
    }

    mutating func close(_ closer: String = "}") {
        depth -= 1
        line(closer)
    }

    /// Writes a proto comment as `///` lines; the first sentence stands alone as the summary.
    mutating func documentation(_ comment: String?) {
        guard let comment else { return }
        let text = commentText(comment)
        guard !text.isEmpty else { return }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            self.line(line.isEmpty ? "///" : "/// " + line)
        }
    }
}

/// A proto comment's text: each line without the space after `//` and trailing spaces, no blank lines around it.
func commentText(_ comment: String) -> String {
    var lines = comment.split(separator: "\n", omittingEmptySubsequences: false).map { line in
        var text = Substring(line)
        if text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }
    while lines.last?.isEmpty == true { lines.removeLast() }
    while lines.first?.isEmpty == true { lines.removeFirst() }
    return lines.joined(separator: "\n")
}
