import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileSystem

/// Builds the scheduler's settings from the configuration: the verifier for `Kind=`, the
/// delivery client, limits and retry policy, with secrets read from their credentials.
public enum VerificationFactory {
    /// - Throws: ``CredentialReader/Failure`` for a secret that is missing, unreadable or empty
    ///   (a configuration error: `reconciled` exits 78).
    public static func settings(
        for configuration: Configuration, environment: [String: String], transport: any HTTPTransport
    ) throws(CredentialReader.Failure) -> Scheduler.Settings {
        let verifier = configuration.verifier
        let verifierEndpoint = EndpointSettings(url: verifier.url.absoluteString, timeout: verifier.timeout, caFile: verifier.caFile)
        let orderVerifier: any OrderVerifier
        switch verifier.kind {
        case .appstore:
            orderVerifier = try appStoreVerifier(verifier, endpoint: verifierEndpoint, environment: environment, transport: transport)
        case .apple:
            guard let source = verifier.sharedSecret else {
                throw CredentialReader.Failure(description: "[Verifier] Kind=apple needs SharedSecretCredential= or SharedSecretFile=")
            }
            let secret = try CredentialReader.read(source, key: keyName(source, section: "Verifier", prefix: "SharedSecret"), environment: environment)
            let sandbox = verifier.effectiveSandboxURL.map {
                EndpointSettings(url: $0.absoluteString, timeout: verifier.timeout, caFile: verifier.caFile)
            }
            orderVerifier = AppleVerifier(
                production: verifierEndpoint, sandbox: sandbox, bundleID: verifier.bundleID ?? "", allowSandbox: verifier.allowSandbox,
                sharedSecret: secret, transport: transport)
        case .http:
            var endpoint = verifierEndpoint
            if let source = verifier.token {
                endpoint.bearerToken = try CredentialReader.read(source, key: keyName(source, section: "Verifier", prefix: "Token"), environment: environment)
            }
            orderVerifier = MerchantVerifier(endpoint: endpoint, transport: transport)
        }
        var delivery: DeliveryClient?
        if let url = configuration.delivery.url {
            var endpoint = EndpointSettings(url: url.absoluteString, timeout: configuration.delivery.timeout, caFile: configuration.delivery.caFile)
            if let source = configuration.delivery.token {
                endpoint.bearerToken = try CredentialReader.read(
                    source, key: keyName(source, section: "Delivery", prefix: "Token"), environment: environment)
            }
            delivery = DeliveryClient(endpoint: endpoint, transport: transport)
        }
        var settings = Scheduler.Settings(
            verifier: orderVerifier, delivery: delivery,
            resolver: AttemptResolver(policy: RetryPolicy(configuration.retry), deliveryConfigured: delivery != nil),
            maxInFlight: verifier.maxInFlight, maxRate: verifier.maxRate, burst: verifier.burst,
            circuitThreshold: verifier.circuitThreshold, circuitCooldown: verifier.circuitCooldown,
            circuitMaxCooldown: verifier.circuitMaxCooldown,
            requestTimeout: max(verifier.timeout, configuration.delivery.timeout))
        settings.sandboxRateFactor = verifier.sandboxRateFactor
        return settings
    }

    /// `Kind=appstore`: the In-App Purchase key, the trusted roots, one signed-data verifier per
    /// environment.
    static func appStoreVerifier(
        _ verifier: Configuration.VerifierSettings, endpoint: EndpointSettings, environment: [String: String], transport: any HTTPTransport
    ) throws(CredentialReader.Failure) -> AppStoreVerifier {
        guard let source = verifier.privateKey, let keyID = verifier.keyID, let issuerID = verifier.issuerID,
            let bundleID = verifier.bundleID
        else {
            throw CredentialReader.Failure(description: "[Verifier] Kind=appstore needs IssuerID=, KeyID=, BundleID= and PrivateKeyCredential= or PrivateKeyFile=")
        }
        let keyName = keyName(source, section: "Verifier", prefix: "PrivateKey")
        let pem = try CredentialReader.read(source, key: keyName, environment: environment)
        let key: ES256PrivateKey
        do {
            key = try ES256PrivateKey(pem: pem)
        } catch {
            throw CredentialReader.Failure(description: "\(keyName): not an In-App Purchase key (\(error))")
        }
        var roots: [[UInt8]] = []
        for path in verifier.rootCertificates {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CredentialReader.Failure(description: "[Verifier] RootCertificates=: cannot read \(path)")
            }
            do {
                roots += try SignedDataVerifier.rootCertificates(fromFile: Array(data))
            } catch {
                throw CredentialReader.Failure(description: "[Verifier] RootCertificates=: \(path): \(error)")
            }
        }
        let production: SignedDataVerifier, sandbox: SignedDataVerifier
        do {
            production = try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .production)
            sandbox = try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .sandbox)
        } catch {
            throw CredentialReader.Failure(description: "[Verifier] RootCertificates=: \(error)")
        }
        let sandboxURL = verifier.effectiveSandboxURL ?? Configuration.VerifierSettings.appStoreSandboxURL
        return AppStoreVerifier(
            production: endpoint,
            sandbox: EndpointSettings(url: sandboxURL.absoluteString, timeout: verifier.timeout, caFile: verifier.caFile),
            bundleID: bundleID, appAppleID: verifier.appAppleID, allowSandbox: verifier.allowSandbox,
            tokens: AppStoreTokenCache(key: key, keyID: keyID, issuerID: issuerID, bundleID: bundleID),
            productionTransactions: production, sandboxTransactions: sandbox, transport: transport)
    }

    /// The key that names a secret, for messages (`[Verifier] SharedSecretCredential=`).
    static func keyName(_ source: CredentialSource, section: String, prefix: String) -> String {
        switch source {
        case .credential: "[\(section)] \(prefix)Credential="
        case .file: "[\(section)] \(prefix)File="
        }
    }
}
