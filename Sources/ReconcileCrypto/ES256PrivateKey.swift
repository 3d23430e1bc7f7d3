import CCrypto

/// An EC P-256 private key that signs with ES256 (ECDSA over SHA-256, as JOSE defines it).
public struct ES256PrivateKey: Sendable {
    let key: EVPKey

    /// Reads a PEM private key: PKCS#8 (`BEGIN PRIVATE KEY`, the form App Store Connect hands out
    /// as a `.p8` file) or SEC1 (`BEGIN EC PRIVATE KEY`). Encrypted keys are refused.
    public init(pem: String) throws(ES256KeyError) {
        OpenSSLErrorQueue.clear()
        let bio = MemoryBIO(reading: Array(pem.utf8))
        guard let pointer = reconcile_pem_read_private_key(bio.pointer) else {
            throw .unreadablePEM(OpenSSLErrorQueue.drain())
        }
        key = try EVPKey(takingP256: pointer)
    }

    /// The matching public key.
    public var publicKey: ES256PublicKey {
        // Round trip through SubjectPublicKeyInfo DER: a new EVP_PKEY with no private half.
        var der: UnsafeMutablePointer<UInt8>?
        let count = i2d_PUBKEY(key.pointer, &der)
        guard count > 0, let der else { fatalError("i2d_PUBKEY failed on a loaded P-256 key (out of memory)") }
        defer { CRYPTO_free(der, #fileID, #line) }
        var cursor: UnsafePointer<UInt8>? = UnsafePointer(der)
        guard let pointer = d2i_PUBKEY(nil, &cursor, Int(count)), let publicKey = try? ES256PublicKey(key: EVPKey(takingP256: pointer))
        else { fatalError("d2i_PUBKEY failed on OpenSSL's own encoding") }
        return publicKey
    }

    /// The ES256 signature of `message`: SHA-256, ECDSA, and the result in JOSE's form, `r` and
    /// `s` as 32 big-endian bytes each (64 bytes), not OpenSSL's DER `ECDSA-Sig-Value`.
    public func sign(_ message: [UInt8]) throws(ES256KeyError) -> [UInt8] {
        let der: [UInt8]
        do {
            der = try key.signSHA256(message)
        } catch {
            throw .openSSL(error.message)
        }
        return try Self.rawSignature(fromDER: der)
    }

    /// `r || s`, each left-padded to 32 bytes, from a DER `ECDSA-Sig-Value`.
    static func rawSignature(fromDER der: [UInt8]) throws(ES256KeyError) -> [UInt8] {
        var cursor: UnsafePointer<UInt8>? = nil
        let signature: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let signature else { throw .openSSL("cannot read OpenSSL's DER signature: \(OpenSSLErrorQueue.drain())") }
        defer { ECDSA_SIG_free(signature) }
        var raw = [UInt8](repeating: 0, count: 64)
        let written = raw.withUnsafeMutableBufferPointer { buffer in
            (BN_bn2binpad(ECDSA_SIG_get0_r(signature), buffer.baseAddress, 32),
             BN_bn2binpad(ECDSA_SIG_get0_s(signature), buffer.baseAddress! + 32, 32))
        }
        guard written.0 == 32, written.1 == 32 else { throw .openSSL("signature component longer than 32 bytes") }
        return raw
    }
}
