import CCrypto

/// One reference to an OpenSSL `EVP_PKEY`, released on deinit.
///
/// `@unchecked Sendable`: the key is never modified after init, and OpenSSL 3 allows one
/// `EVP_PKEY` to be used by several threads at once for signing and verifying (each operation
/// has its own `EVP_MD_CTX`).
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes over `pointer` (one reference) after checking that it is an EC P-256 key; frees it
    /// and throws otherwise.
    init(takingP256 pointer: OpaquePointer) throws(ES256KeyError) {
        self.pointer = pointer
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else {
            let name = EVP_PKEY_get0_type_name(pointer).map { String(cString: $0) } ?? "unknown"
            throw .notEllipticCurve(name)
        }
        var name = [CChar](repeating: 0, count: 80)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &name, name.count, &length) == 1 else {
            throw .wrongCurve("unknown")
        }
        let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard curve == "prime256v1" || curve == "P-256" else { throw .wrongCurve(curve) }
    }

    /// Takes over `pointer` (one reference) whatever its type; the caller checks it.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    /// The key's OpenSSL type name (`RSA`, `EC`), for messages.
    var typeName: String {
        EVP_PKEY_get0_type_name(pointer).map { String(cString: $0) } ?? "unknown"
    }

    /// Why OpenSSL could not sign: its error queue, as text.
    struct SignFailure: Error {
        let message: String
    }

    /// The key's signature of `message` over SHA-256, as OpenSSL makes it (an RSA key's default
    /// padding is PKCS#1 v1.5; an EC key's signature is DER).
    func signSHA256(_ message: [UInt8]) throws(SignFailure) -> [UInt8] {
        OpenSSLErrorQueue.clear()
        guard let context = EVP_MD_CTX_new() else { throw SignFailure(message: "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else {
            throw SignFailure(message: OpenSSLErrorQueue.drain())
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw SignFailure(message: OpenSSLErrorQueue.drain())
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw SignFailure(message: OpenSSLErrorQueue.drain())
        }
        return Array(signature.prefix(length))
    }

    deinit {
        EVP_PKEY_free(pointer)
    }
}
