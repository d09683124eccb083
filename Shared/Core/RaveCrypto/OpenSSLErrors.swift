import COpenSSL

/// Drains OpenSSL's thread-local error queue into one line, so failures say what OpenSSL objected to.
func openSSLErrorDescription() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.isEmpty ? "no OpenSSL error recorded" : messages.joined(separator: "; ")
}

/// Forgets whatever a failed check left on this thread's OpenSSL error queue.
///
/// A signature or tag that does not verify is an answer, not a failure; its queue entry must not show up in the
/// message of an unrelated later failure on the same thread.
func clearOpenSSLErrors() {
    ERR_clear_error()
}
