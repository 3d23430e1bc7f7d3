import CCrypto

/// An RSA public key that checks RS256 signatures (for a mock token endpoint and tests).
public struct RS256PublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) {
        self.key = key
    }

    /// Reads a PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) holding an RSA key.
    public init(pem: String) throws(RS256KeyError) {
        OpenSSLErrorQueue.clear()
        let bio = MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = reconcile_pem_read_public_key(bio.pointer) else {
            throw .unreadablePEM(OpenSSLErrorQueue.drain())
        }
        key = try RS256PrivateKey.checked(EVPKey(taking: pointer))
    }

    /// The key as PEM SubjectPublicKeyInfo.
    public var pem: String {
        let bio = MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, key.pointer) == 1 else { fatalError("PEM_write_bio_PUBKEY failed (out of memory)") }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// Whether `signature` is a valid RS256 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard !signature.isEmpty, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, message, message.count) == 1
    }
}
