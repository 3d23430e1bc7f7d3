import CCrypto

/// Counting the certificates of a `CAFile=`.
public enum PEMCertificates {
    /// How many PEM certificates `pem` holds; 0 for none (a DER file, a key alone, other text),
    /// `nil` when a certificate block is damaged.
    public static func count(in pem: [UInt8]) -> Int? {
        let count = pem.withUnsafeBytes { reconcile_count_pem_certificates($0.baseAddress, Int32(clamping: $0.count)) }
        return count < 0 ? nil : Int(count)
    }
}
