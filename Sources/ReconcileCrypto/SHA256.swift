import CCrypto

/// SHA-256 through OpenSSL's libcrypto.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let input = Array(bytes)
        let ok = input.withUnsafeBytes { buffer in
            EVP_Digest(buffer.baseAddress, buffer.count, &output, &length, EVP_sha256(), nil)
        }
        precondition(ok == 1 && length == 32, "EVP_Digest(SHA-256) failed")
        return Array(output.prefix(32))
    }

    /// The digest as 64 lower-case hex digits.
    public static func hexDigest(_ bytes: some Collection<UInt8>) -> String {
        hex(digest(bytes))
    }

    /// A short, log-safe fingerprint of a secret or receipt: the first 12 hex digits of its
    /// SHA-256. Identifies a value without revealing it.
    public static func fingerprint(_ text: String) -> String {
        String(hexDigest(Array(text.utf8)).prefix(12))
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output = [UInt8]()
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }
}
