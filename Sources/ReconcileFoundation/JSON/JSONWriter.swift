/// Serializes ``JSONValue`` as compact JSON text, members in their stored order.
///
/// Written as UTF-8 bytes: a string's bytes are copied in runs between the few that need an
/// escape (quote, backslash, control characters, DEL, and U+2028/U+2029, which some JavaScript
/// readers take for line ends), never scalar by scalar.
public enum JSONWriter {
    /// Compact JSON text.
    public static func string(_ value: JSONValue) -> String {
        String(decoding: bytes(value), as: UTF8.self)
    }

    /// Compact JSON as UTF-8 bytes.
    public static func bytes(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(estimatedSize(value))
        write(value, into: &output)
        return output
    }

    /// Appends compact JSON to `output`.
    public static func write(_ value: JSONValue, into output: inout [UInt8]) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): append(text, to: &output)
        case .string(let text): writeString(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                write(element, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (position, member) in object.members.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                writeString(member.key, into: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// Writes a quoted JSON string, escaping quotes, backslashes and control characters.
    public static func writeString(_ text: String, into output: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        writeString(text, into: &bytes)
        output += String(decoding: bytes, as: UTF8.self)
    }

    /// Writes a quoted JSON string as UTF-8, escaping quotes, backslashes, control characters,
    /// DEL and U+2028/U+2029.
    public static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { escape($0, into: &output) }
        output.append(UInt8(ascii: "\""))
    }

    /// The escaping proper: runs of bytes that need none are appended at once.
    private static func escape(_ input: UnsafeBufferPointer<UInt8>, into output: inout [UInt8]) {
        var runStart = 0
        var index = 0
        let count = input.count
        while index < count {
            let byte = input[index]
            let escaped: StaticString?
            var length = 1
            switch byte {
            case UInt8(ascii: "\""): escaped = "\\\""
            case UInt8(ascii: "\\"): escaped = "\\\\"
            case UInt8(ascii: "\n"): escaped = "\\n"
            case UInt8(ascii: "\r"): escaped = "\\r"
            case UInt8(ascii: "\t"): escaped = "\\t"
            case 0x00..<0x20, 0x7F: escaped = nil
            case 0xE2 where index + 2 < count && input[index + 1] == 0x80 && (input[index + 2] == 0xA8 || input[index + 2] == 0xA9):
                // U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR
                escaped = nil
                length = 3
            default:
                index += 1
                continue
            }
            if runStart < index { output.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<index])) }
            if let escaped {
                escaped.withUTF8Buffer { output.append(contentsOf: $0) }
            } else {
                let scalar: UInt32 = length == 3 ? (input[index + 2] == 0xA8 ? 0x2028 : 0x2029) : UInt32(byte)
                appendUnicodeEscape(scalar, to: &output)
            }
            index += length
            runStart = index
        }
        if runStart < count { output.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<count])) }
    }

    /// `\u` and four lower-case hex digits.
    private static func appendUnicodeEscape(_ scalar: UInt32, to output: inout [UInt8]) {
        let digits: StaticString = "0123456789abcdef"
        output.append(UInt8(ascii: "\\"))
        output.append(UInt8(ascii: "u"))
        digits.withUTF8Buffer { hex in
            for shift in stride(from: 12, through: 0, by: -4) {
                output.append(hex[Int((scalar >> UInt32(shift)) & 0xF)])
            }
        }
    }

    private static func append(_ text: String, to output: inout [UInt8]) {
        var text = text
        text.withUTF8 { output.append(contentsOf: $0) }
    }

    /// Roughly the output's size, to reserve it once (exact for values without escapes).
    private static func estimatedSize(_ value: JSONValue) -> Int {
        switch value {
        case .null, .bool: 5
        case .number(let text): text.utf8.count
        case .string(let text): text.utf8.count + 2
        case .array(let elements): elements.reduce(2) { $0 + estimatedSize($1) + 1 }
        case .object(let object): object.members.reduce(2) { $0 + $1.key.utf8.count + 4 + estimatedSize($1.value) }
        }
    }
}
