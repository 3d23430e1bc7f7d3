import ReconcileFoundation

/// A name in a spool directory as the kernel gives it: bytes, not text (DESIGN §3).
///
/// Linux names are any bytes but NUL and `/`. A name that is not UTF-8, or two names that are
/// the same text in different Unicode normal forms (NFC `café`, NFD `café`), are different files:
/// equality, hashing and order are by bytes, and the bytes go unchanged from `readdir` or
/// inotify to `openat`, `renameat` and `unlinkat`. People see ``escaped``.
public struct SpoolFileName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    public init(_ text: String) {
        bytes = Array(text.utf8)
    }

    public static func < (lhs: SpoolFileName, rhs: SpoolFileName) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    public var description: String { escaped }

    /// Whether the daemon reads this name from `incoming/`: names starting with `.` or ending in
    /// `.tmp` are producers' work in progress (DESIGN §3), and are left alone.
    public var isCandidate: Bool {
        !bytes.isEmpty && bytes.first != UInt8(ascii: ".") && !bytes.ends(with: Self.temporarySuffix) && isValidComponent
    }

    static let temporarySuffix = Array(".tmp".utf8)

    /// Whether a directory can hold an entry of this name: 1–255 bytes, no NUL or `/`, not `.`
    /// or `..`.
    public var isValidComponent: Bool {
        !bytes.isEmpty && bytes.count <= 255 && !bytes.contains(0) && !bytes.contains(UInt8(ascii: "/"))
            && bytes != [UInt8(ascii: ".")] && bytes != [UInt8(ascii: "."), UInt8(ascii: ".")]
    }

    /// Calls `body` with the name as a NUL-terminated C string.
    public func withCString<Result>(_ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        let terminated = bytes + [0]
        return try terminated.withUnsafeBufferPointer { buffer in
            try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
        }
    }

    // MARK: - Shown to people

    /// The name for logs and reason files: UTF-8 text as it is, except that a backslash is
    /// doubled, control characters are escaped (`\n`, `\r`, `\t`, `\x1b`), as are the C1 set,
    /// line separators and bidi overrides (`\u{202e}`), and bytes that are not UTF-8 are
    /// `\xff`. The escaping is reversible (``init(escaped:)``), so no two names look alike.
    public var escaped: String {
        var result = ""
        var index = 0
        var iterator = bytes.makeIterator()
        var parser = Unicode.UTF8.ForwardParser()
        while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                index += encoded.count
                Self.append(scalar, to: &result)
            case .error(let length):
                for byte in bytes[index..<index + length] { result += "\\x" + Self.hex(UInt32(byte), digits: 2) }
                index += length
            case .emptyInput:
                return result
            }
        }
    }

    private static func append(_ scalar: Unicode.Scalar, to result: inout String) {
        switch scalar {
        case "\\": result += "\\\\"
        case "\n": result += "\\n"
        case "\r": result += "\\r"
        case "\t": result += "\\t"
        case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += "\\x" + hex(scalar.value, digits: 2)
        case _ where needsEscape(scalar): result += "\\u{" + String(scalar.value, radix: 16) + "}"
        default: result.unicodeScalars.append(scalar)
        }
    }

    /// Characters a terminal would act on, or that make text read otherwise than it is stored.
    static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F..<0xA0, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// Reads back what ``escaped`` wrote; `nil` for text it cannot have written.
    public init?(escaped text: String) {
        var bytes: [UInt8] = []
        var scalars = text.unicodeScalars.makeIterator()
        func digit(_ scalar: Unicode.Scalar?) -> UInt32? {
            guard let scalar else { return nil }
            switch scalar {
            case "0"..."9": return scalar.value - 0x30
            case "a"..."f": return scalar.value - 0x61 + 10
            default: return nil
            }
        }
        while let scalar = scalars.next() {
            guard scalar == "\\" else {
                bytes += Array(String(scalar).utf8)
                continue
            }
            switch scalars.next() {
            case "\\": bytes.append(UInt8(ascii: "\\"))
            case "n": bytes.append(0x0A)
            case "r": bytes.append(0x0D)
            case "t": bytes.append(0x09)
            case "x":
                guard let high = digit(scalars.next()), let low = digit(scalars.next()) else { return nil }
                bytes.append(UInt8(high * 16 + low))
            case "u":
                guard scalars.next() == "{" else { return nil }
                var value: UInt32 = 0
                var count = 0
                while let next = scalars.next(), next != "}" {
                    guard let digit = digit(next), count < 6 else { return nil }
                    value = value * 16 + digit
                    count += 1
                }
                guard count > 0, let decoded = Unicode.Scalar(value) else { return nil }
                bytes += Array(String(decoded).utf8)
            default: return nil
            }
        }
        self.bytes = bytes
        // Only the one spelling ``escaped`` gives is accepted, so that reading back is exact.
        guard escaped == text else { return nil }
    }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && self[(count - suffix.count)...].elementsEqual(suffix)
    }
}
