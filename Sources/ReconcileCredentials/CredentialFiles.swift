import ReconcileCore
import ReconcileCrypto
import ReconcileSystem

/// Reading the files ``ConfiguredCredentials`` needs: a service account's key, `CAFile=`
/// anchors, and the names of the keys that name them, for messages.
public enum CredentialFiles {
    /// `[GooglePlay] ServiceAccountCredential=` / `ServiceAccountFile=`: a service account's JSON
    /// key with an RS256-capable private key.
    static func serviceAccount(
        _ source: CredentialSource, key: String, environment: [String: String]
    ) throws(CredentialReader.Failure) -> GoogleServiceAccount {
        let text = try CredentialReader.read(source, key: key, environment: environment)
        do {
            return try GoogleServiceAccount(json: Array(text.utf8))
        } catch {
            throw CredentialReader.Failure(key: key, reason: "\(source) is not a usable service account key: \(error)")
        }
    }

    /// `CAFile=`: PEM certificates, at least one, none damaged.
    static func trustAnchors(_ path: String) throws(CredentialFileProblem) -> TrustAnchors {
        let pem: [UInt8]
        do {
            pem = try CredentialReader.readRegularFile(path, limit: 4 << 20)
        } catch {
            throw CredentialFileProblem(description: error.description)
        }
        switch PEMCertificates.count(in: pem) {
        case nil:
            throw CredentialFileProblem(description: "\(path) holds a damaged PEM certificate")
        case 0:
            throw CredentialFileProblem(
                description: "\(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER one converts with openssl x509 -inform DER -in FILE -out FILE.pem")
        default:
            return TrustAnchors(path: path, pem: pem)
        }
    }

    /// `Section.PrefixCredential` or `Section.PrefixFile`, whichever names the secret.
    public static func keyID(_ source: CredentialSource, section: String, prefix: String) -> String {
        switch source {
        case .credential: "\(section).\(prefix)Credential"
        case .file: "\(section).\(prefix)File"
        }
    }

    /// `[Section] Key=` for `Section.Key`.
    static func keyName(_ id: String) -> String {
        let parts = id.split(separator: ".", maxSplits: 1)
        return "[\(parts[0])] \(parts[1])="
    }
}
