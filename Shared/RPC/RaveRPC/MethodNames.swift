/// How the server names a client's method in metrics and logs, where a name only the client chose must not go.
public enum MethodNames {
    /// Longest method name written to a log line as it is; longer ones are cut (see `printable`).
    public static let printableLength = 128

    /// `method` itself when it is at most `printableLength` UTF-8 bytes, else its first bytes (cut on a character
    /// boundary) followed by "…" and its full length, so a 64 KiB name costs a log line 150 bytes.
    public static func printable(_ method: String) -> String {
        let utf8 = method.utf8
        guard utf8.count > printableLength else { return method }
        var end = utf8.index(utf8.startIndex, offsetBy: printableLength)
        // Back up over continuation bytes (10xxxxxx) to the start of a scalar, so the prefix stays valid UTF-8.
        while end > utf8.startIndex && utf8[end] & 0xC0 == 0x80 {
            end = utf8.index(before: end)
        }
        let prefix = String(decoding: utf8[..<end], as: UTF8.self)
        return "\(prefix)…(\(utf8.count) bytes)"
    }
}
