/// Parses one datagram of journald's native protocol (systemd's JOURNAL_NATIVE_PROTOCOL):
/// `NAME=value\n` lines, or `NAME\n` followed by a 64-bit little-endian length, the value's
/// bytes and `\n` for a value that holds a newline.
public struct JournalNativeMessage: Sendable {
    /// Every assignment in order (a name may repeat).
    public var fields: [(name: String, value: String)]

    public init(_ bytes: [UInt8]) throws {
        var fields: [(String, String)] = []
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") }) else {
                throw ListenerError("an assignment without '=' or newline at byte \(index)")
            }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                guard let newline = bytes[end...].firstIndex(of: UInt8(ascii: "\n")) else {
                    throw ListenerError("\(name): no newline after the value")
                }
                fields.append((name, String(decoding: bytes[(end + 1)..<newline], as: UTF8.self)))
                index = newline + 1
            } else {
                let lengthStart = end + 1
                guard lengthStart + 8 <= bytes.count else { throw ListenerError("\(name): truncated length") }
                var length = 0
                for offset in 0..<8 { length |= Int(bytes[lengthStart + offset]) << (8 * offset) }
                let valueStart = lengthStart + 8
                guard valueStart + length < bytes.count, bytes[valueStart + length] == UInt8(ascii: "\n") else {
                    throw ListenerError("\(name): value of \(length) bytes does not fit")
                }
                fields.append((name, String(decoding: bytes[valueStart..<(valueStart + length)], as: UTF8.self)))
                index = valueStart + length + 1
            }
        }
        self.fields = fields
    }

    /// The first value of `name`.
    public subscript(name: String) -> String? {
        fields.first { $0.name == name }?.value
    }
}
