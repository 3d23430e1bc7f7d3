import Foundation

/// Base64url (RFC 4648 §5) without padding, as JOSE uses it.
public enum Base64URL {
    /// A character outside the base64url alphabet, or a length no encoding has.
    public struct DecodingError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// `bytes` in base64url, without `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    /// The bytes `text` encodes. Padding is refused, as JOSE forbids it; so are characters of
    /// standard base64 (`+`, `/`) and white space.
    public static func decode(_ text: some StringProtocol) throws(DecodingError) -> [UInt8] {
        var standard = [UInt8]()
        standard.reserveCapacity(text.utf8.count + 3)
        for (offset, byte) in text.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(byte)
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            default: throw DecodingError(description: "base64url: character not in the alphabet at offset \(offset)")
            }
        }
        if standard.count % 4 == 1 {
            throw DecodingError(description: "base64url: impossible length \(standard.count)")
        }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(standard)) else {
            throw DecodingError(description: "base64url: not a valid encoding")
        }
        return Array(data)
    }
}
