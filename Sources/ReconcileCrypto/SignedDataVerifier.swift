import CCrypto
import Foundation

/// Verifies signed data from the App Store (a signed transaction, renewal info or notification:
/// a compact JWS) the way Apple's app-store-server-library does with online checks off, through
/// OpenSSL.
///
/// In order: three base64url parts; header `alg` ES256; an `x5c` header of exactly three
/// certificates; the leaf and intermediate from it chain to one of the configured roots (the
/// third `x5c` certificate is ignored: only configured roots are trusted), with Apple's marker
/// extensions on leaf and intermediate; the ES256 signature with the leaf's key; then the
/// payload's bundle id and environment.
///
/// Certificate validity is judged at the payload's `signedDate` when it has one, else at `now`,
/// as Apple's library does without online checks: a payload signed while its certificates were
/// valid stays verifiable after they expire. There is no revocation (OCSP) check.
///
/// Unlike Apple's library, the `.xcode` and `.localTesting` environments get no exemption from
/// these checks (that library skips them there): StoreKit testing payloads, whose `x5c` holds
/// one certificate of Xcode's own, are refused as `missing_x5c`.
public final class SignedDataVerifier: @unchecked Sendable {
    // @unchecked: `store` is filled in init and only read afterwards; OpenSSL locks an X509_STORE
    // internally, so many X509_STORE_CTX may use it from several threads at once.
    private let store: OpaquePointer
    /// The bundle id payloads must carry.
    public let bundleID: String
    /// The environment payloads must come from.
    public let environment: AppStoreEnvironment

    /// Apple's "receipt signing" marker extension, carried by the leaf certificate.
    static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    /// Apple's WWDR intermediate marker extension.
    static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    /// Why root certificates could not be taken.
    public enum RootCertificateError: Error, Equatable, Sendable, CustomStringConvertible {
        /// No root certificate was given (or the file held none).
        case none
        /// The certificate at this index (0-based) is not one OpenSSL can read.
        case unreadable(index: Int)

        public var description: String {
            switch self {
            case .none: "no root certificate given"
            case .unreadable(let index): "root certificate \(index + 1) is not a readable DER or PEM certificate"
            }
        }
    }

    /// `rootCertificates`: DER certificates, the only trust anchors (for production, Apple Root
    /// CA - G3 from https://www.apple.com/certificateauthority/).
    public init(rootCertificates: [[UInt8]], bundleID: String, environment: AppStoreEnvironment) throws(RootCertificateError) {
        guard !rootCertificates.isEmpty else { throw .none }
        var parsed: [X509Certificate] = []
        for (index, der) in rootCertificates.enumerated() {
            guard let certificate = X509Certificate(der: der) else { throw .unreadable(index: index) }
            parsed.append(certificate)
        }
        guard let store = X509_STORE_new() else { fatalError("X509_STORE_new failed (out of memory)") }
        for certificate in parsed {
            // The store takes its own reference.
            guard X509_STORE_add_cert(store, certificate.pointer) == 1 else {
                // Only a duplicate root fails here; it is already in.
                OpenSSLErrorQueue.clear()
                continue
            }
        }
        self.store = store
        self.bundleID = bundleID
        self.environment = environment
    }

    deinit {
        X509_STORE_free(store)
    }

    /// The certificates in a root file's bytes, as DER: every `BEGIN CERTIFICATE` block of a
    /// PEM file, or the one certificate of a DER file (Apple publishes its roots as DER `.cer`).
    public static func rootCertificates(fromFile bytes: [UInt8]) throws(RootCertificateError) -> [[UInt8]] {
        if String(decoding: bytes.prefix(4096), as: UTF8.self).contains("-----BEGIN ") {
            OpenSSLErrorQueue.clear()
            defer { OpenSSLErrorQueue.clear() }
            let bio = MemoryBIO(reading: bytes)
            var certificates: [[UInt8]] = []
            while let pointer = reconcile_pem_read_certificate(bio.pointer) {
                certificates.append(X509Certificate(taking: pointer).der)
            }
            // The loop ends at the end of the input (OpenSSL then reports "no start line") or at a
            // block that does not parse.
            let last = ERR_peek_last_error()
            if last != 0 && ERR_GET_REASON(last) != PEM_R_NO_START_LINE { throw .unreadable(index: certificates.count) }
            guard !certificates.isEmpty else { throw .none }
            return certificates
        }
        guard !bytes.isEmpty else { throw .none }
        guard let certificate = X509Certificate(der: bytes) else { throw .unreadable(index: 0) }
        return [certificate.der]
    }

    /// Verifies `compactJWS` (see the type's summary for the checks) and returns its payload.
    /// `now` is the time certificates are checked at when the payload has no `signedDate`.
    public func verify(_ compactJWS: String, now: Date) throws(SignedDataError) -> VerifiedPayload {
        let parts = compactJWS.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected 3 dot-separated parts, found \(parts.count)") }

        let header: Header = try Self.decodeJSON(parts[0], part: "header")
        guard let alg = header.alg else { throw .unsupportedAlgorithm("the header has no alg") }
        guard alg == "ES256" else { throw .unsupportedAlgorithm("alg is \(SignedDataError.printable(alg)), not ES256") }
        let (leaf, intermediate) = try Self.certificates(header.x5c)

        let payloadJSON: [UInt8]
        do { payloadJSON = try Base64URL.decode(parts[1]) } catch { throw .malformed("payload: \(error)") }
        let payload: Payload = try Self.decodeJSON(payloadJSON, part: "payload")
        let signature: [UInt8]
        do { signature = try Base64URL.decode(parts[2]) } catch { throw .malformed("signature: \(error)") }

        let signedDate = try payload.signedDate.map { (milliseconds: Double) throws(SignedDataError) -> Date in
            // Year 9999 at most: beyond, time_t arithmetic is no longer meaningful.
            guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 253_402_300_800_000 else {
                throw .malformed("signedDate is out of range")
            }
            return Date(timeIntervalSince1970: milliseconds / 1000)
        }
        let leafKey = try verifyChain(leaf: leaf, intermediate: intermediate, at: signedDate ?? now)

        let signingInput = Array(compactJWS.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard leafKey.isValidSignature(signature, for: signingInput) else { throw .badSignature }

        let bundle = payload.bundleID
        guard bundle == bundleID else { throw .wrongBundle(found: bundle) }
        let environmentName = payload.environmentName
        guard environmentName == environment.rawValue else { throw .wrongEnvironment(found: environmentName) }
        return VerifiedPayload(json: payloadJSON, bundleID: bundleID, environment: environment, signedDate: signedDate)
    }

    // MARK: - Steps

    /// Leaf and intermediate from `x5c`, which must hold exactly three standard-base64 DER
    /// certificates. The third (the root) must parse too, but is not used (Apple's library does
    /// not look at it either).
    private static func certificates(_ x5c: [String]?) throws(SignedDataError) -> (X509Certificate, X509Certificate) {
        guard let x5c else { throw .missingX5C("the header has no x5c") }
        guard x5c.count == 3 else { throw .missingX5C("x5c holds \(x5c.count) certificates, expected 3") }
        var parsed: [X509Certificate] = []
        for (index, text) in x5c.enumerated() {
            guard let der = Data(base64Encoded: text), let certificate = X509Certificate(der: Array(der)) else {
                throw .missingX5C("x5c[\(index)] is not a base64 DER certificate")
            }
            parsed.append(certificate)
        }
        return (parsed[0], parsed[1])
    }

    /// Builds leaf → intermediate (untrusted) → a configured root, checks it at `time` and checks
    /// Apple's marker extensions; returns the leaf's public key.
    private func verifyChain(leaf: X509Certificate, intermediate: X509Certificate, at time: Date) throws(SignedDataError) -> ES256PublicKey {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        guard let context = X509_STORE_CTX_new() else { fatalError("X509_STORE_CTX_new failed (out of memory)") }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = reconcile_x509_stack_new() else { fatalError("sk_X509_new_null failed (out of memory)") }
        // The stack does not own the certificate (no extra reference): freeing it leaves ours alone.
        defer { reconcile_x509_stack_free(untrusted) }
        guard reconcile_x509_stack_push(untrusted, intermediate.pointer) > 0 else { fatalError("sk_X509_push failed (out of memory)") }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            throw .invalidChain("cannot set up verification: \(OpenSSLErrorQueue.drain())")
        }
        X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(context), time_t(time.timeIntervalSince1970.rounded(.down)))
        let verified = withExtendedLifetime((leaf, intermediate)) { X509_verify_cert(context) }
        guard verified == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
            throw .invalidChain(text)
        }
        guard let chain = X509_STORE_CTX_get0_chain(context) else { throw .invalidChain("OpenSSL returned no chain") }
        let length = reconcile_x509_stack_count(chain)
        guard length == 3 else { throw .invalidChain("the chain has \(length) certificates, expected leaf, intermediate and root") }
        guard let builtLeaf = reconcile_x509_stack_value(chain, 0), X509Certificate.hasExtension(builtLeaf, oid: Self.leafMarkerOID) else {
            throw .invalidChain("the leaf certificate lacks Apple's extension \(Self.leafMarkerOID)")
        }
        guard let builtIntermediate = reconcile_x509_stack_value(chain, 1),
            X509Certificate.hasExtension(builtIntermediate, oid: Self.intermediateMarkerOID)
        else {
            throw .invalidChain("the intermediate certificate lacks Apple's extension \(Self.intermediateMarkerOID)")
        }
        do {
            return try ES256PublicKey(certificate: leaf)
        } catch {
            throw .invalidChain("the leaf certificate's key cannot check ES256: \(error)")
        }
    }

    // MARK: - JSON

    private struct Header: Decodable {
        let alg: String?
        let x5c: [String]?
    }

    private struct Payload: Decodable {
        let bundleId: String?
        let environment: String?
        let signedDate: Double?
        /// A notification (responseBodyV2) names its app in exactly one of `data`, `summary`
        /// (`RENEWAL_EXTENSION`/`SUMMARY`), `appData` (`RESCIND_CONSENT`) or
        /// `externalPurchaseToken` (`docs/protocols/app-store-notifications.md` §1).
        let data: NotificationData?
        let summary: NotificationData?
        let appData: NotificationData?
        let externalPurchaseToken: ExternalPurchaseToken?

        /// The top level's `bundleId`, else the notification body's.
        var bundleID: String? {
            bundleId ?? data?.bundleId ?? summary?.bundleId ?? appData?.bundleId ?? externalPurchaseToken?.bundleId
        }

        /// The top level's `environment`, else the notification body's; an external purchase
        /// token has none: Apple's library takes it as `Sandbox` when `externalPurchaseId`
        /// starts with `SANDBOX`, else `Production`.
        var environmentName: String? {
            if let named = environment ?? data?.environment ?? summary?.environment ?? appData?.environment { return named }
            guard let token = externalPurchaseToken else { return nil }
            return token.externalPurchaseId?.hasPrefix("SANDBOX") == true ? AppStoreEnvironment.sandbox.rawValue : AppStoreEnvironment.production.rawValue
        }
    }

    private struct NotificationData: Decodable {
        let bundleId: String?
        let environment: String?
    }

    private struct ExternalPurchaseToken: Decodable {
        let bundleId: String?
        let externalPurchaseId: String?
    }

    private static func decodeJSON<T: Decodable>(_ part: Substring, part name: String) throws(SignedDataError) -> T {
        let bytes: [UInt8]
        do { bytes = try Base64URL.decode(part) } catch { throw .malformed("\(name): \(error)") }
        return try decodeJSON(bytes, part: name)
    }

    private static func decodeJSON<T: Decodable>(_ bytes: [UInt8], part name: String) throws(SignedDataError) -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch DecodingError.typeMismatch(_, let context) where !context.codingPath.isEmpty {
            let field = context.codingPath.map(\.stringValue).joined(separator: ".")
            switch (name, field) {
            case ("header", "alg"): throw .unsupportedAlgorithm("alg is not a string")
            case ("header", let field) where field.hasPrefix("x5c"): throw .missingX5C("x5c is not an array of strings")
            default: throw .malformed("\(name) field \(field) has the wrong JSON type")
            }
        } catch {
            throw .malformed("\(name) is not a JSON object")
        }
    }
}
