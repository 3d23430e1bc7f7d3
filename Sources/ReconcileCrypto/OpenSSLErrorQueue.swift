import CCrypto

/// OpenSSL's per-thread error queue, read into text for error messages. The texts name the
/// library routine and reason only; OpenSSL never puts key or data bytes into them.
enum OpenSSLErrorQueue {
    /// Empties the queue, so that a later `drain()` reports only what the next call left.
    static func clear() {
        ERR_clear_error()
    }

    /// The queued errors, oldest first, joined by "; " (and the queue emptied); `fallback` when
    /// the queue was empty.
    static func drain(fallback: String = "no detail from OpenSSL") -> String {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return messages.isEmpty ? fallback : messages.joined(separator: "; ")
    }
}
