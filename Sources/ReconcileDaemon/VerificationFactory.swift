import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileEngine
import ReconcileHTTP
import ReconcileSpool
import ReconcileSystem

/// Builds the scheduler's settings from the configuration: the verifier for `Kind=`, the
/// delivery client, the revocation sender, limits and retry policy.
///
/// First it reads and checks everything the configuration names outside itself — secrets, the
/// In-App Purchase key, root certificates, `CAFile=` anchors — in ``resources(for:environment:credentials:)``:
/// `reconciled` at start-up and reload, and `reconcilectl check-config`, go through that one
/// function, so check-config refuses exactly what the daemon would.
public enum VerificationFactory {
    /// How a systemd credential (`…Credential=`) is treated when `$CREDENTIALS_DIRECTORY` is not
    /// set.
    public enum CredentialsDirectory: Sendable {
        /// A problem: the daemon cannot read the secret.
        case required
        /// Not checked, and listed in ``Resources/unchecked`` (`reconcilectl check-config` run
        /// from a shell: only the service manager sets the directory).
        case optional
    }

    /// What the configuration names outside itself, read and checked.
    public struct Resources: Sendable {
        public var sharedSecret: String?
        public var verifierToken: String?
        public var deliveryToken: String?
        /// `[Revocation]`'s bearer token.
        public var revocationToken: String?
        /// `Kind=appstore`: the In-App Purchase key and the signed-data verifiers built on
        /// `RootCertificates=`.
        public var appStore: AppStoreResources?
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
    }

    /// `Kind=appstore`'s key and signed-data verifiers.
    public struct AppStoreResources: Sendable {
        /// `nil` when the key is a credential not checked.
        public var key: ES256PrivateKey?
        public var production: SignedDataVerifier
        public var sandbox: SignedDataVerifier
        public var rootCount: Int
    }

    /// The scheduler's settings for `configuration`, its secrets, key and certificates read.
    ///
    /// - Throws: ``ConfigurationError`` naming each file that is missing, unreadable or not what
    ///   its key needs, at the line of that key (`reconciled` exits 78, a reload is refused).
    public static func settings(
        for configuration: Configuration, environment: [String: String], transport: any HTTPTransport
    ) throws(ConfigurationError) -> Scheduler.Settings {
        try settings(for: configuration, resources: resources(for: configuration, environment: environment), transport: transport)
    }

    /// What the daemon's parts need of one configuration, from one reading of the files it names.
    public struct Configured: Sendable {
        public var settings: Scheduler.Settings
        /// Reads store notification files.
        public var notifications: NotificationFileReader
        /// Get Notification History (`Kind=appstore`, `Poll=`); `nil`: off.
        public var polling: AppStoreNotificationPoller.Settings?
        /// `voidedpurchases.list` (`[GooglePlay]`); `nil`: no `[GooglePlay]`.
        public var playPolling: PlayVoidedPurchasePoller.Settings?
    }

    /// The scheduler's settings, the reader of store notification files and the pollers'
    /// settings, from one reading of the files the configuration names.
    public static func configured(
        for configuration: Configuration, environment: [String: String], transport: any HTTPTransport
    ) throws(ConfigurationError) -> Configured {
        let resources = try resources(for: configuration, environment: environment)
        let reader = notificationReader(configuration, resources)
        let settings = try settings(for: configuration, resources: resources, transport: transport)
        return Configured(
            settings: settings, notifications: reader, polling: polling(configuration, resources, reader),
            playPolling: playPolling(configuration, settings.googlePlay))
    }

    /// Google Play's voided purchases (DESIGN §5a): read every `Poll=` (not at all with
    /// `Poll=off`, but a push's confirmation still reads them), with `[GooglePlay]`'s verifier.
    static func playPolling(_ configuration: Configuration, _ play: GooglePlaySettings?) -> PlayVoidedPurchasePoller.Settings? {
        guard let play else { return nil }
        var settings = PlayVoidedPurchasePoller.Settings(
            interval: configuration.notifications.poll, packageNames: configuration.googlePlay.packageNames, verifier: play.verifier)
        settings.sharedTurns = configuration.state.isShared
        return settings
    }

    /// `[Notifications] Poll=` for `Kind=appstore` (DESIGN §5a): Get Notification History on
    /// `[Verifier]`'s endpoints (the sandbox too with `AllowSandbox=yes`), signed with its key,
    /// every payload verified by the notification files' own reader. `nil`: `Poll=off`, or
    /// another `Kind=`.
    static func polling(
        _ configuration: Configuration, _ resources: Resources, _ reader: NotificationFileReader
    ) -> AppStoreNotificationPoller.Settings? {
        let verifier = configuration.verifier
        guard let interval = configuration.notifications.poll, configuration.hasVerifier, verifier.kind == .appstore,
            let key = resources.appStore?.key, let keyID = verifier.keyID, let issuerID = verifier.issuerID, let bundleID = verifier.bundleID
        else { return nil }
        let proxy = configuration.daemon.proxy?.absoluteString
        func endpoint(_ url: URL) -> EndpointSettings {
            EndpointSettings(url: url.absoluteString, timeout: verifier.timeout, trustAnchors: resources.verifierAnchors, proxy: proxy)
        }
        var environments = [AppStoreNotificationPoller.Environment(endpoint: .production, settings: endpoint(verifier.url))]
        if verifier.allowSandbox {
            environments.append(.init(endpoint: .sandbox, settings: endpoint(verifier.effectiveSandboxURL ?? Configuration.VerifierSettings.appStoreSandboxURL)))
        }
        var settings = AppStoreNotificationPoller.Settings(
            interval: interval, environments: environments,
            tokens: AppStoreTokenCache(key: key, keyID: keyID, issuerID: issuerID, bundleID: bundleID),
            verify: { jws, now throws(OrderFileProblem) in try reader.verifyAppStore(signedPayload: jws, via: .poll, now: now) })
        // Nodes sharing a PostgreSQL store take turns; one daemon per SQLite store polls alone.
        settings.sharedTurns = configuration.state.isShared
        settings.consumption = configuration.notifications.consumption
        return settings
    }

    /// App Store notifications are verified against `RootCertificates=` (Apple's root by
    /// default) and `BundleID=`, whatever the `Kind=` (DESIGN §5a): `Kind=appstore`'s signed-data
    /// verifiers, else ones made here (the sandbox one only with `AllowSandbox=yes`). When the
    /// roots cannot be read, a notification file is refused with that reason — not the daemon:
    /// a `Kind=apple` daemon without Apple's root file keeps working for orders.
    static func notificationReader(_ configuration: Configuration, _ resources: Resources) -> NotificationFileReader {
        var reader = appStoreNotificationReader(configuration, resources)
        reader.googlePlay = configuration.hasGooglePlay
        return reader
    }

    static func appStoreNotificationReader(_ configuration: Configuration, _ resources: Resources) -> NotificationFileReader {
        let allowSandbox = configuration.verifier.allowSandbox
        if let appStore = resources.appStore {
            return NotificationFileReader(appStore: .init(production: appStore.production, sandbox: allowSandbox ? appStore.sandbox : nil))
        }
        guard configuration.hasVerifier, configuration.verifier.bundleID != nil else {
            return NotificationFileReader(appStore: nil, unavailable: "[Verifier] BundleID= is not set")
        }
        do {
            let verifiers = try appStore(configuration.verifier, key: nil)
            return NotificationFileReader(appStore: .init(production: verifiers.production, sandbox: allowSandbox ? verifiers.sandbox : nil))
        } catch {
            return NotificationFileReader(appStore: nil, unavailable: "[Verifier] RootCertificates= \(error.description)")
        }
    }

    /// Reads and checks every secret, key and certificate file `configuration` names; every
    /// problem is reported, not only the first.
    public static func resources(
        for configuration: Configuration, environment: [String: String], credentials: CredentialsDirectory = .required
    ) throws(ConfigurationError) -> Resources {
        var resources = Resources()
        var problems: [ConfigurationProblem] = []
        func secret(_ source: CredentialSource?, section: String, prefix: String) -> String? {
            guard let source else { return nil }
            let id = keyID(source, section: section, prefix: prefix)
            do {
                return try CredentialReader.read(source, key: keyName(id), environment: environment)
            } catch {
                if error.credentialsDirectoryMissing, credentials == .optional, case .credential(let name) = source {
                    resources.unchecked.append("\(keyName(id))\(name)")
                } else {
                    problems.append(configuration.problem(id, error.reason))
                }
                return nil
            }
        }
        func anchors(_ path: String?, section: String) -> TrustAnchors? {
            guard let path else { return nil }
            do {
                return try trustAnchors(path)
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
                    problems.append(configuration.problem(keyID(source, section: "Verifier", prefix: "PrivateKey"), "not an In-App Purchase key (\(error))"))
                }
            }
            do {
                resources.appStore = try appStore(verifier, key: key)
            } catch {
                problems.append(configuration.problem("Verifier.RootCertificates", error.description))
            }
        }
        if configuration.hasVerifier { resources.verifierAnchors = anchors(verifier.caFile, section: "Verifier") }
        if configuration.hasGooglePlay, let source = configuration.googlePlay.serviceAccount {
            let id = keyID(source, section: "GooglePlay", prefix: "ServiceAccount")
            do {
                resources.googlePlayAccount = try serviceAccount(source, key: keyName(id), environment: environment)
            } catch {
                if error.credentialsDirectoryMissing, credentials == .optional, case .credential(let name) = source {
                    resources.unchecked.append("\(keyName(id))\(name)")
                } else {
                    problems.append(configuration.problem(id, error.reason))
                }
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

    /// The scheduler's settings from `configuration` and what ``resources(for:environment:credentials:)`` read.
    static func settings(
        for configuration: Configuration, resources: Resources, transport: any HTTPTransport
    ) throws(ConfigurationError) -> Scheduler.Settings {
        let verifier = configuration.verifier
        let proxy = configuration.daemon.proxy?.absoluteString
        func endpoint(_ url: URL, timeout: Duration, anchors: TrustAnchors?, token: String? = nil) -> EndpointSettings {
            EndpointSettings(url: url.absoluteString, timeout: timeout, trustAnchors: anchors, proxy: proxy, bearerToken: token)
        }
        func missing(_ id: String) -> ConfigurationError {
            ConfigurationError(configuration.problem(id, "was not read (set $CREDENTIALS_DIRECTORY, or use a …File= key)"))
        }
        let production = endpoint(verifier.url, timeout: verifier.timeout, anchors: resources.verifierAnchors)
        let sandbox = verifier.effectiveSandboxURL.map { endpoint($0, timeout: verifier.timeout, anchors: resources.verifierAnchors) }
        let orderVerifier: (any OrderVerifier)?
        var consumption: [ConsumptionSender] = []
        switch configuration.hasVerifier ? verifier.kind : nil {
        case nil:
            orderVerifier = nil
        case .apple?:
            guard let secret = resources.sharedSecret else { throw missing("Verifier.SharedSecretCredential") }
            orderVerifier = AppleVerifier(
                production: production, sandbox: sandbox, bundleID: verifier.bundleID ?? "", allowSandbox: verifier.allowSandbox,
                sharedSecret: secret, transport: transport)
        case .http?:
            var merchant = production
            merchant.bearerToken = resources.verifierToken
            orderVerifier = MerchantVerifier(endpoint: merchant, transport: transport)
        case .appstore?:
            guard let appStore = resources.appStore, let key = appStore.key, let keyID = verifier.keyID, let issuerID = verifier.issuerID,
                let bundleID = verifier.bundleID
            else { throw missing("Verifier.PrivateKeyCredential") }
            let api = AppStoreVerifier(
                production: production,
                sandbox: sandbox ?? endpoint(Configuration.VerifierSettings.appStoreSandboxURL, timeout: verifier.timeout, anchors: resources.verifierAnchors),
                bundleID: bundleID, appAppleID: verifier.appAppleID, allowSandbox: verifier.allowSandbox,
                tokens: AppStoreTokenCache(key: key, keyID: keyID, issuerID: issuerID, bundleID: bundleID),
                productionTransactions: appStore.production, sandboxTransactions: appStore.sandbox, transport: transport)
            orderVerifier = api
            consumption = consumptionSenders(configuration, api)
        }
        let delivery = configuration.delivery.url.map {
            var client = DeliveryClient(
                endpoint: endpoint($0, timeout: configuration.delivery.timeout, anchors: resources.deliveryAnchors, token: resources.deliveryToken),
                transport: transport)
            client.playPackages = configuration.verifiers.playPackages
            return client
        }
        var googlePlay: GooglePlaySettings?
        if configuration.hasGooglePlay {
            let play = configuration.googlePlay
            guard let account = resources.googlePlayAccount, let packageName = play.packageName else {
                throw missing(configuration.googlePlay.serviceAccount.map { keyID($0, section: "GooglePlay", prefix: "ServiceAccount") }
                    ?? "GooglePlay.ServiceAccountCredential")
            }
            let tokenURL = play.tokenURL?.absoluteString ?? account.tokenURI
            let tokens = PlayAccessTokenCache(
                account: account,
                endpoint: EndpointSettings(url: tokenURL, timeout: play.timeout, trustAnchors: resources.googlePlayAnchors, proxy: proxy),
                transport: transport)
            let api = endpoint(play.url, timeout: play.timeout, anchors: resources.googlePlayAnchors)
            googlePlay = GooglePlaySettings(
                verifier: GooglePlayVerifier(
                    api: api, packageName: packageName, otherPackageNames: Array(play.packageNames.dropFirst()),
                    allowTestPurchases: play.allowTestPurchases, tokens: tokens, transport: transport),
                maxInFlight: play.maxInFlight, maxRate: play.maxRate, burst: play.burst, circuitThreshold: play.circuitThreshold,
                circuitCooldown: play.circuitCooldown, circuitMaxCooldown: play.circuitMaxCooldown)
        }
        let revocation = configuration.revocation.url.map {
            RevocationSender(
                endpoint: endpoint(
                    $0, timeout: configuration.revocation.timeout, anchors: resources.revocationAnchors, token: resources.revocationToken),
                transport: transport)
        }
        var timeout = max(verifier.timeout, configuration.delivery.timeout)
        if revocation != nil { timeout = max(timeout, configuration.revocation.timeout) }
        if configuration.hasGooglePlay { timeout = max(timeout, configuration.googlePlay.timeout) }
        var settings = Scheduler.Settings(
            verifier: orderVerifier, delivery: delivery,
            resolver: AttemptResolver(
                policy: RetryPolicy(configuration.retry), deliveryConfigured: delivery != nil, playFollowUp: configuration.googlePlay.followUp),
            maxInFlight: verifier.maxInFlight, maxRate: verifier.maxRate, burst: verifier.burst,
            circuitThreshold: verifier.circuitThreshold, circuitCooldown: verifier.circuitCooldown,
            circuitMaxCooldown: verifier.circuitMaxCooldown,
            requestTimeout: timeout)
        // A shared store's leases last LeaseTime= and are renewed; SQLite's are released at start.
        settings.leaseTime = configuration.state.isShared ? configuration.state.leaseTime : nil
        settings.sandboxRateFactor = verifier.sandboxRateFactor
        settings.googlePlay = googlePlay
        settings.revocation = revocation
        settings.consumption = consumption
        return settings
    }

    /// `[Notifications] ConsumptionAnswer=on` (DESIGN §5a): Send Consumption Information on
    /// `Kind=appstore`'s endpoints and with its key, one sender per environment (the sandbox's
    /// too: a request Apple sends from it is answered there, whatever `AllowSandbox=`). None
    /// without `CustomerConsented=yes`: no answer is ever queued.
    static func consumptionSenders(_ configuration: Configuration, _ api: AppStoreVerifier) -> [ConsumptionSender] {
        guard configuration.notifications.consumption.answers else { return [] }
        return [
            ConsumptionSender(endpoint: .production, api: api.production, tokens: api.tokens, transport: api.transport),
            ConsumptionSender(endpoint: .sandbox, api: api.sandbox, tokens: api.tokens, transport: api.transport),
        ]
    }

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

    /// A problem with a file a key names; its description is the message.
    struct FileProblem: Error, CustomStringConvertible {
        var description: String
    }

    /// `CAFile=`: PEM certificates, at least one, none damaged.
    static func trustAnchors(_ path: String) throws(FileProblem) -> TrustAnchors {
        let pem: [UInt8]
        do {
            pem = try CredentialReader.readRegularFile(path, limit: 4 << 20)
        } catch {
            throw FileProblem(description: error.description)
        }
        switch PEMCertificates.count(in: pem) {
        case nil:
            throw FileProblem(description: "\(path) holds a damaged PEM certificate")
        case 0:
            throw FileProblem(
                description: "\(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----); a DER one converts with openssl x509 -inform DER -in FILE -out FILE.pem")
        default:
            return TrustAnchors(path: path, pem: pem)
        }
    }

    /// `Kind=appstore`: the roots of `RootCertificates=` and a signed-data verifier per
    /// environment.
    static func appStore(_ verifier: Configuration.VerifierSettings, key: ES256PrivateKey?) throws(FileProblem) -> AppStoreResources {
        var roots: [[UInt8]] = []
        for path in verifier.rootCertificates {
            let data: [UInt8]
            do {
                data = try CredentialReader.readRegularFile(path, limit: 4 << 20)
            } catch {
                throw FileProblem(description: error.description)
            }
            do {
                roots += try SignedDataVerifier.rootCertificates(fromFile: data)
            } catch {
                throw FileProblem(description: "\(path): \(error)")
            }
        }
        do {
            let bundleID = verifier.bundleID ?? ""
            return AppStoreResources(
                key: key, production: try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .production),
                sandbox: try SignedDataVerifier(rootCertificates: roots, bundleID: bundleID, environment: .sandbox), rootCount: roots.count)
        } catch {
            throw FileProblem(description: "\(error)")
        }
    }

    /// `Section.PrefixCredential` or `Section.PrefixFile`, whichever names the secret.
    static func keyID(_ source: CredentialSource, section: String, prefix: String) -> String {
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
