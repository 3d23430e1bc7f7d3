import CCrypto

/// An EC P-256 public key that checks ES256 signatures (JOSE's raw `r || s` form).
public struct ES256PublicKey: Sendable {
    let key: EVPKey

    init(key: EVPKey) {
        self.key = key
    }

    /// Reads a PEM SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) holding an EC P-256 key.
    public init(pem: String) throws(ES256KeyError) {
        OpenSSLErrorQueue.clear()
        let bio = MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = reconcile_pem_read_public_key(bio.pointer) else {
            throw .unreadablePEM(OpenSSLErrorQueue.drain())
        }
        key = try EVPKey(takingP256: pointer)
    }

    /// The subject public key of a certificate, if it is EC P-256.
    init(certificate: X509Certificate) throws(ES256KeyError) {
        OpenSSLErrorQueue.clear()
        guard let pointer = X509_get_pubkey(certificate.pointer) else {
            throw .unreadablePEM("the certificate's public key: \(OpenSSLErrorQueue.drain())")
        }
        key = try EVPKey(takingP256: pointer)
    }

    /// The key as PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
    public var pem: String {
        let bio = MemoryBIO()
        guard PEM_write_bio_PUBKEY(bio.pointer, key.pointer) == 1 else { fatalError("PEM_write_bio_PUBKEY failed (out of memory)") }
        return String(decoding: bio.contents, as: UTF8.self)
    }

    /// Whether `rawSignature` (64 bytes, `r || s`) is a valid ES256 signature of `message` by
    /// this key. A signature of any other length, or with `r` or `s` out of range, is invalid.
    public func isValidSignature(_ rawSignature: [UInt8], for message: [UInt8]) -> Bool {
        guard rawSignature.count == 64, let der = Self.derSignature(fromRaw: rawSignature) else { return false }
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key.pointer) == 1 else { return false }
        return EVP_DigestVerify(context, der, der.count, message, message.count) == 1
    }

    /// The DER `ECDSA-Sig-Value` OpenSSL verifies, from JOSE's `r || s`.
    static func derSignature(fromRaw raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, 32, nil) }
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        guard ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_ECDSA_SIG(signature, &der)
        guard count > 0, let der else { return nil }
        defer { CRYPTO_free(der, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: der, count: Int(count)))
    }
}
