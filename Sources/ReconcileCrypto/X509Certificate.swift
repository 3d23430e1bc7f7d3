import CCrypto

/// One reference to an OpenSSL `X509`, released on deinit.
///
/// `@unchecked Sendable`: the certificate is never modified after parsing, and OpenSSL allows a
/// parsed `X509` to be read, and verified against, from several threads at once.
final class X509Certificate: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Parses one DER certificate; `nil` when OpenSSL cannot, or when bytes follow it.
    init?(der: [UInt8]) {
        OpenSSLErrorQueue.clear()
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            let certificate = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let start = buffer.baseAddress { consumed = cursor - start }
            return certificate
        }
        OpenSSLErrorQueue.clear()
        guard let parsed else { return nil }
        guard consumed == der.count else {
            X509_free(parsed)
            return nil
        }
        pointer = parsed
    }

    /// Takes over one reference to `pointer`.
    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(pointer)
    }

    /// The certificate's DER encoding.
    var der: [UInt8] {
        var output: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509(pointer, &output)
        guard count > 0, let output else { fatalError("i2d_X509 failed on a parsed certificate (out of memory)") }
        defer { CRYPTO_free(output, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: output, count: Int(count)))
    }

    /// Whether the certificate carries an extension with the dotted object identifier `oid`
    /// (critical or not, whatever its value).
    func hasExtension(oid: String) -> Bool {
        Self.hasExtension(pointer, oid: oid)
    }

    /// `hasExtension(oid:)` for a certificate OpenSSL owns (one in a verified chain).
    static func hasExtension(_ certificate: OpaquePointer, oid: String) -> Bool {
        guard let object = OBJ_txt2obj(oid, 1) else { return false }
        defer { ASN1_OBJECT_free(object) }
        return X509_get_ext_by_OBJ(certificate, object, -1) >= 0
    }
}
