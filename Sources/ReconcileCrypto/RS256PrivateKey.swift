import CCrypto

/// An RSA private key that signs with RS256 (RSASSA-PKCS1-v1_5 over SHA-256, as JOSE defines
/// it): a Google service account's `private_key`.
public struct RS256PrivateKey: Sendable {
    let key: EVPKey

    /// Google's service-account keys are 2048 bits; shorter RSA keys are refused.
    public static let minimumBits = 2048

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, as Google's key files hold it) or
    /// PKCS#1 (`BEGIN RSA PRIVATE KEY`). Encrypted keys are refused.
    public init(pem: String) throws(RS256KeyError) {
        OpenSSLErrorQueue.clear()
        let bio = MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = reconcile_pem_read_private_key(bio.pointer) else {
            throw .unreadablePEM(OpenSSLErrorQueue.drain())
        }
        key = try Self.checked(EVPKey(taking: pointer))
    }

    /// `key` if it is RSA of at least ``minimumBits``.
    static func checked(_ key: EVPKey) throws(RS256KeyError) -> EVPKey {
        guard EVP_PKEY_get_base_id(key.pointer) == EVP_PKEY_RSA else { throw .notRSA(key.typeName) }
        let bits = Int(EVP_PKEY_get_bits(key.pointer))
        guard bits >= minimumBits else { throw .tooShort(bits) }
        return key
    }

    /// The modulus length in bits.
    public var bits: Int { Int(EVP_PKEY_get_bits(key.pointer)) }

    /// The matching public key.
    public var publicKey: RS256PublicKey {
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_PUBKEY(key.pointer, &der)
        guard count > 0, let der else { fatalError("i2d_PUBKEY failed on a loaded RSA key (out of memory)") }
        defer { CRYPTO_free(der, #fileID, #line) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
        guard let pointer = d2i_PUBKEY(nil, &cursor, Int(count)) else { fatalError("d2i_PUBKEY failed on OpenSSL's own encoding") }
        return RS256PublicKey(key: EVPKey(taking: pointer))
    }

    /// The RS256 signature of `message` (as long as the modulus).
    public func sign(_ message: [UInt8]) throws(RS256KeyError) -> [UInt8] {
        // For an RSA key the default padding is PKCS#1 v1.5: RS256.
        do {
            return try key.signSHA256(message)
        } catch {
            throw .openSSL(error.message)
        }
    }
}
