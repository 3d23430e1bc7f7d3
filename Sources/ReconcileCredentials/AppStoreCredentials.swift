import ReconcileCore
import ReconcileCrypto
import ReconcileSystem

/// `Kind=appstore`'s In-App Purchase key and a signed-data verifier per environment, built on
/// `RootCertificates=` (Apple's root by default). Also what verifies App Store notifications
/// whatever the `Kind=` (DESIGN §5a).
public struct AppStoreCredentials: Sendable {
    /// `nil` when the key is a credential not checked.
    public var key: ES256PrivateKey?
    public var production: SignedDataVerifier
    public var sandbox: SignedDataVerifier
    public var rootCount: Int

    /// `Kind=appstore`: the roots of `RootCertificates=` and a signed-data verifier per
    /// environment.
    public static func read(_ verifier: Configuration.VerifierSettings, key: ES256PrivateKey?) throws(CredentialFileProblem) -> AppStoreCredentials {
        var roots: [[UInt8]] = []
        for path in verifier.rootCertificates {
            let data: [UInt8]
            do {
                data = try CredentialReader.readRegularFile(path, limit: 4 << 20)
            } catch {
                throw CredentialFileProblem(description: error.description)
            }
            do {
                roots += try SignedDataVerifier.rootCertificates(fromFile: data)
            } catch {
                throw CredentialFileProblem(description: "\(path): \(error)")
            }
        }
        do {
            let bundleID = verifier.bundleID ?? ""
            return AppStoreCredentials(
                key: key, production: try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .production),
                sandbox: try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .sandbox), rootCount: roots.count)
        } catch {
            throw CredentialFileProblem(description: "\(error)")
        }
    }
}
