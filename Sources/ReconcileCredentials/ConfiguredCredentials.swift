import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSystem

/// Everything the configuration names outside itself — secrets, the In-App Purchase key, a
/// service account, root certificates, `CAFile=` anchors — read and checked.
///
/// `reconciled` reads them at start-up and reload, and `reconcilectl check-config` through the
/// same ``read(for:environment:credentials:)``, so check-config refuses exactly what the daemon
/// would; this target is what both executables share of it (the CLI links no engine or HTTP).
public struct ConfiguredCredentials: Sendable {
    /// How a systemd credential (`…Credential=`) is treated when `$CREDENTIALS_DIRECTORY` is not
    /// set.
    public enum CredentialsDirectory: Sendable {
        /// A problem: the daemon cannot read the secret.
        case required
        /// Not checked, and listed in ``ConfiguredCredentials/unchecked`` (`reconcilectl
        /// check-config` run from a shell: only the service manager sets the directory).
        case optional
    }

    public var sharedSecret: String?
    public var verifierToken: String?
    public var deliveryToken: String?
    /// `[Revocation]`'s bearer token.
    public var revocationToken: String?
    /// `Kind=appstore`: the In-App Purchase key and the signed-data verifiers built on
    /// `RootCertificates=`.
    public var appStore: AppStoreCredentials?
    /// `[GooglePlay]`'s service account (`nil` when not configured, or a credential not
    /// checked).
    public var googlePlayAccount: GoogleServiceAccount?
    /// `CAFile=` anchors per section.
    public var verifierAnchors: TrustAnchors?
    public var googlePlayAnchors: TrustAnchors?
    public var deliveryAnchors: TrustAnchors?
    public var revocationAnchors: TrustAnchors?
    /// Credentials not checked (``CredentialsDirectory/optional``), as `[Section] Key=name`.
    public var unchecked: [String] = []

    public init() {}

    /// Reads and checks every secret, key and certificate file `configuration` names; every
    /// problem is reported, not only the first.
    public static func read(
        for configuration: Configuration, environment: [String: String], credentials: CredentialsDirectory = .required
    ) throws(ConfigurationError) -> ConfiguredCredentials {
        var resources = ConfiguredCredentials()
        var problems: [ConfigurationProblem] = []
        // A credential that cannot be read: a problem, or (check-config outside the service) a
        // credential left unchecked.
        func unreadable(_ error: CredentialReader.Failure, source: CredentialSource, id: String) {
            if error.credentialsDirectoryMissing, credentials == .optional, case .credential(let name) = source {
                resources.unchecked.append("\(CredentialFiles.keyName(id))\(name)")
            } else {
                problems.append(configuration.problem(id, error.reason))
            }
        }
        func secret(_ source: CredentialSource?, section: String, prefix: String) -> String? {
            guard let source else { return nil }
            let id = CredentialFiles.keyID(source, section: section, prefix: prefix)
            do {
                return try CredentialReader.read(source, key: CredentialFiles.keyName(id), environment: environment)
            } catch {
                unreadable(error, source: source, id: id)
                return nil
            }
        }
        func anchors(_ path: String?, section: String) -> TrustAnchors? {
            guard let path else { return nil }
            do {
                return try CredentialFiles.trustAnchors(path)
            } catch {
                problems.append(configuration.problem("\(section).CAFile", error.description))
                return nil
            }
        }

        let verifier = configuration.verifier
        switch configuration.hasVerifier ? verifier.kind : nil {
        case nil:
            break
        case .apple?:
            resources.sharedSecret = secret(verifier.sharedSecret, section: "Verifier", prefix: "SharedSecret")
        case .http?:
            resources.verifierToken = secret(verifier.token, section: "Verifier", prefix: "Token")
        case .appstore?:
            let pem = secret(verifier.privateKey, section: "Verifier", prefix: "PrivateKey")
            var key: ES256PrivateKey?
            if let pem, let source = verifier.privateKey {
                do {
                    key = try ES256PrivateKey(pem: pem)
                } catch {
                    problems.append(configuration.problem(CredentialFiles.keyID(source, section: "Verifier", prefix: "PrivateKey"), "not an In-App Purchase key (\(error))"))
                }
            }
            do {
                resources.appStore = try AppStoreCredentials.read(verifier, key: key)
            } catch {
                problems.append(configuration.problem("Verifier.RootCertificates", error.description))
            }
        }
        if configuration.hasVerifier { resources.verifierAnchors = anchors(verifier.caFile, section: "Verifier") }
        if configuration.hasGooglePlay, let source = configuration.googlePlay.serviceAccount {
            let id = CredentialFiles.keyID(source, section: "GooglePlay", prefix: "ServiceAccount")
            do {
                resources.googlePlayAccount = try CredentialFiles.serviceAccount(source, key: CredentialFiles.keyName(id), environment: environment)
            } catch {
                unreadable(error, source: source, id: id)
            }
            resources.googlePlayAnchors = anchors(configuration.googlePlay.caFile, section: "GooglePlay")
        }
        // The merchant's endpoints: the token only when the section has a URL (it is sent
        // nowhere else), the anchors whenever named.
        func merchantEndpoint(_ settings: MerchantEndpointSettings, section: String) -> (token: String?, anchors: TrustAnchors?) {
            (settings.url != nil ? secret(settings.token, section: section, prefix: "Token") : nil, anchors(settings.caFile, section: section))
        }
        (resources.deliveryToken, resources.deliveryAnchors) = merchantEndpoint(configuration.delivery, section: "Delivery")
        (resources.revocationToken, resources.revocationAnchors) = merchantEndpoint(configuration.revocation, section: "Revocation")
        guard problems.isEmpty else { throw ConfigurationError(problems: problems) }
        return resources
    }

    /// `[State] PasswordCredential=` / `PasswordFile=`: the shared store's password. `nil` when
    /// none is configured (libpq then finds one: `PGPASSWORD`, `~/.pgpass`), or, with
    /// ``CredentialsDirectory/optional``, a credential outside the service.
    public static func storePassword(
        _ configuration: Configuration, environment: [String: String], credentials: CredentialsDirectory = .required
    ) throws(CredentialReader.Failure) -> String? {
        guard configuration.state.isShared, let source = configuration.state.password else { return nil }
        do {
            return try CredentialReader.read(source, key: "[State] Password", environment: environment)
        } catch {
            if error.credentialsDirectoryMissing, credentials == .optional { return nil }
            throw error
        }
    }
}
