/// A strict RFC 8259 JSON parser with precise error positions.
///
/// Strict where it matters for money: invalid UTF-8, raw control characters, trailing data,
/// lone surrogates and (by default) duplicate object keys are errors, and nesting is bounded so
/// that a hostile document cannot exhaust the stack.
public struct JSONParser: Sendable {
    /// How deep arrays and objects may nest.
    public var maximumDepth: Int
    /// Whether an object may name the same key twice. RFC 8259 leaves the meaning open, so an
    /// order file that does it is ambiguous and refused.
    public var allowsDuplicateKeys: Bool

    public init(maximumDepth: Int = 64, allowsDuplicateKeys: Bool = false) {
        self.maximumDepth = maximumDepth
        self.allowsDuplicateKeys = allowsDuplicateKeys
    }

    /// Parses one complete JSON text.
    public func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> JSONValue in
            var cursor = Cursor(bytes: buffer, options: self)
            return try cursor.parseDocument()
        }
    }

    /// Parses one complete JSON text from a string.
    public func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }
}

/// Why a text is not valid JSON, and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong ("expected ',' or '}' after an object member").
    public var message: String
    /// Zero-based byte offset of the problem.
    public var offset: Int
    /// One-based line and column (in bytes) of the problem.
    public var line: Int
    public var column: Int

    public var description: String {
        "\(message) at line \(line), column \(column)"
    }
}

private struct Cursor {
    let bytes: UnsafeBufferPointer<UInt8>
    let options: JSONParser
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, options: JSONParser) {
        self.bytes = bytes
        self.options = options
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw error("a UTF-8 byte order mark is not allowed", at: 0)
        }
        skipWhitespace()
        guard index < bytes.count else {
            throw error(bytes.isEmpty ? "empty document" : "no JSON value, only whitespace", at: index)
        }
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count {
            throw error("unexpected \(describe(bytes[index])) after the JSON value", at: index)
        }
        return value
    }

    // MARK: - Values

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input, expected a value", at: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected \(describe(bytes[index])), expected a value", at: index)
        }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        let start = index
        try enterContainer(at: start)
        index += 1  // {
        var members: [JSONObject.Member] = []
        var seen = Set<String>()
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(JSONObject(members))
        }
        while true {
            skipWhitespace()
            guard peek() == UInt8(ascii: "\"") else {
                if index >= bytes.count { throw error("unexpected end of input inside an object", at: index) }
                throw error("expected a string key, found \(describe(bytes[index]))", at: index)
            }
            let keyOffset = index
            let key = try parseString()
            if !options.allowsDuplicateKeys {
                if !seen.insert(key).inserted {
                    throw error("duplicate key \"\(Self.printable(key))\"", at: keyOffset)
                }
            }
            skipWhitespace()
            guard peek() == UInt8(ascii: ":") else {
                if index >= bytes.count { throw error("unexpected end of input, expected ':'", at: index) }
                throw error("expected ':' after key \"\(Self.printable(key))\", found \(describe(bytes[index]))", at: index)
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONObject.Member(key: key, value: value))
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input inside an object", at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return .object(JSONObject(members))
            default:
                throw error("expected ',' or '}' after an object member, found \(describe(bytes[index]))", at: index)
            }
        }
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer(at: index)
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input inside an array", at: index) }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return .array(elements)
            default:
                throw error("expected ',' or ']' after an array element, found \(describe(bytes[index]))", at: index)
            }
        }
    }

    mutating func enterContainer(at offset: Int) throws(JSONParseError) {
        depth += 1
        if depth > options.maximumDepth {
            throw error("nesting deeper than \(options.maximumDepth) levels", at: offset)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let start = index
        let count = literal.utf8CodeUnitCount
        let matches = literal.withUTF8Buffer { expected in
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != expected[offset] { return false }
            return true
        }
        guard matches else { throw error("invalid literal, expected '\(literal)'", at: start) }
        index += count
    }

    // MARK: - Numbers

    mutating func parseNumber() throws(JSONParseError) -> String {
        let start = index
        if peek() == UInt8(ascii: "-") { index += 1 }
        guard let first = peek(), isDigit(first) else {
            throw error("a number needs a digit after '-'", at: index)
        }
        if first == UInt8(ascii: "0") {
            index += 1
            if let next = peek(), isDigit(next) { throw error("a number may not have a leading zero", at: start) }
        } else {
            while let next = peek(), isDigit(next) { index += 1 }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard let next = peek(), isDigit(next) else { throw error("a number needs a digit after '.'", at: index) }
            while let next = peek(), isDigit(next) { index += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard let next = peek(), isDigit(next) else {
                throw error("a number needs a digit in its exponent", at: index)
            }
            while let next = peek(), isDigit(next) { index += 1 }
        }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    // MARK: - Strings

    mutating func parseString() throws(JSONParseError) -> String {
        let open = index
        index += 1  // opening quote
        // Fast path: no escapes, ASCII only.
        var scan = index
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[index..<scan]), as: UTF8.self)
                index = scan + 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { break }
            scan += 1
        }
        var utf8: [UInt8] = Array(bytes[index..<scan])
        index = scan
        while true {
            guard index < bytes.count else { throw error("unterminated string", at: open) }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: utf8, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0x00..<0x20:
                throw error("\(describe(byte)) must be escaped in a string", at: index)
            case 0x80...:
                let length = try validateUTF8Sequence(at: index)
                utf8.append(contentsOf: bytes[index..<index + length])
                index += length
            default:
                utf8.append(byte)
                index += 1
            }
        }
    }

    mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONParseError) {
        let start = index
        index += 1  // backslash
        guard let byte = peek() else { throw error("unterminated escape sequence", at: start) }
        index += 1
        switch byte {
        case UInt8(ascii: "\""): utf8.append(byte)
        case UInt8(ascii: "\\"): utf8.append(byte)
        case UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4(escapeStart: start)
            if (0xD800...0xDBFF).contains(scalar) {
                guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                    throw error("lone high surrogate in \\u escape", at: start)
                }
                let lowStart = index
                index += 2
                let low = try parseHex4(escapeStart: lowStart)
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw error("high surrogate not followed by a low surrogate", at: lowStart)
                }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw error("lone low surrogate in \\u escape", at: start)
            }
            // Valid by construction: not a surrogate, at most 0x10FFFF.
            let unicode = Unicode.Scalar(scalar)!
            utf8.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw error("invalid escape sequence '\\\(describeRaw(byte))'", at: start)
        }
    }

    mutating func parseHex4(escapeStart: Int) throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("incomplete \\u escape", at: escapeStart) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid hex digit in \\u escape", at: index)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// Checks one multi-byte UTF-8 sequence starting at `offset` and returns its length.
    func validateUTF8Sequence(at offset: Int) throws(JSONParseError) -> Int {
        switch UTF8Validation.sequenceLength(in: bytes, at: offset) {
        case .valid(let length): return length
        case .invalid: throw error("invalid UTF-8 byte 0x\(hex(bytes[offset]))", at: offset)
        }
    }

    // MARK: - Helpers

    func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    func describe(_ byte: UInt8) -> String {
        switch byte {
        case 0x00: "NUL byte"
        case 0x01..<0x20, 0x7F: "control character 0x\(hex(byte))"
        case 0x80...: "byte 0x\(hex(byte))"
        default: "'\(Character(Unicode.Scalar(byte)))'"
        }
    }

    func describeRaw(_ byte: UInt8) -> String {
        (0x21..<0x7F).contains(byte) ? String(Character(Unicode.Scalar(byte))) : "0x\(hex(byte))"
    }

    func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
    }

    static func printable(_ key: String) -> String {
        let limited = key.count > 40 ? String(key.prefix(40)) + "…" : key
        return String(limited.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }

    func error(_ message: String, at offset: Int) -> JSONParseError {
        var line = 1
        var column = 1
        for position in 0..<min(offset, bytes.count) {
            if bytes[position] == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return JSONParseError(message: message, offset: offset, line: line, column: column)
    }
}
