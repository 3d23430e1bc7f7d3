import Foundation
import ReconcileCore
import ReconcileCredentials
import ReconcileCrypto
import ReconcileEngine
import ReconcileFoundation
import ReconcileHTTP
import ReconcileSpool
import ReconcileSystem

/// Builds the scheduler's settings (limits and retry policy, as values) and its senders (the
/// verifier for `Kind=`, the delivery client, Google Play's verifier, the revocation and
/// consumption senders) from the configuration.
///
/// First it reads and checks everything the configuration names outside itself — secrets, the
/// In-App Purchase key, root certificates, `CAFile=` anchors — with ``ConfiguredCredentials``,
/// which `reconcilectl check-config` uses too, so check-config refuses exactly what the daemon
/// would.
public enum VerificationFactory {
    /// What the daemon's parts need of one configuration, from one reading of the files it names.
    public struct Configured: Sendable {
        public var settings: Scheduler.Settings
        public var senders: Scheduler.Senders
        /// Reads store notification files.
        public var notifications: NotificationFileReader
        /// Get Notification History (`Kind=appstore`, `Poll=`); `nil`: off.
        public var polling: AppStoreNotificationPoller.Settings?
        /// `voidedpurchases.list` (`[GooglePlay]`); `nil`: no `[GooglePlay]`.
        public var playPolling: PlayVoidedPurchasePoller.Settings?
        /// Pub/Sub pull (`[GooglePlay] Subscription=`); `nil`: none.
        public var pubSubPulling: PlayPubSubPuller.Settings?
        /// `reconcilectl lookup` and `recover`: the stores' credentials.
        public var support: SupportLookup
        /// Play push files of one-time purchases, confirmed with Google (`[GooglePlay]`); `nil`: none.
        public var pushConfirming: PlayPushConfirmer.Settings?
    }

    /// The scheduler's settings and senders, the reader of store notification files and the
    /// pollers' settings, from one reading of the files the configuration names.
    ///
    /// - Throws: ``ConfigurationError`` naming each file that is missing, unreadable or not what
    ///   its key needs, at the line of that key (`reconciled` exits 78, a reload is refused).
    public static func configured(
        for configuration: Configuration, environment: [String: String], transport: any HTTPTransport
    ) throws(ConfigurationError) -> Configured {
        let resources = try ConfiguredCredentials.read(for: configuration, environment: environment)
        let reader = notificationReader(configuration, resources)
        let (settings, senders) = try scheduler(for: configuration, resources: resources, transport: transport)
        return Configured(
            settings: settings, senders: senders, notifications: reader, polling: polling(configuration, resources, reader),
            playPolling: playPolling(configuration, senders.googlePlay), pubSubPulling: pubSubPulling(configuration, senders.googlePlay),
            support: support(configuration, senders),
            pushConfirming: senders.googlePlay.map { PlayPushConfirmer.Settings(verifier: $0, discovery: configuration.discovery) })
    }

    /// The stores support may ask about a customer's order (DESIGN §5b): the App Store with
    /// `Kind=appstore`'s key — on its production host only, as Apple serves Look Up Order ID —
    /// and Google Play with `[GooglePlay]`'s service account.
    static func support(_ configuration: Configuration, _ senders: Scheduler.Senders) -> SupportLookup {
        let appStore = senders.verifier as? AppStoreVerifier
        var missing = "App Store order ids are looked up with [Verifier] Kind=appstore and its In-App Purchase key (KeyID=, IssuerID=, PrivateKeyFile=); this daemon has Kind=\(configuration.hasVerifier ? configuration.verifier.kind.rawValue : "none")"
        if let appStore, URL(string: appStore.production.url)?.host == Configuration.VerifierSettings.appStoreSandboxURL.host {
            missing = "Apple serves Look Up Order ID in production only, and this daemon's [Verifier] URL= is Apple's sandbox; point URL= at production (the default) to look up customers' orders"
            return SupportLookup(appStore: nil, appStoreMissing: missing, googlePlay: senders.googlePlay)
        }
        return SupportLookup(appStore: appStore, appStoreMissing: missing, googlePlay: senders.googlePlay)
    }

    /// Play's real-time notifications pulled from `[GooglePlay] Subscription=` (DESIGN §5b),
    /// with `[GooglePlay]`'s verifier, whose tokens then carry Pub/Sub's scope.
    static func pubSubPulling(_ configuration: Configuration, _ play: GooglePlayVerifier?) -> PlayPubSubPuller.Settings? {
        guard let play, let subscription = configuration.googlePlay.subscription, play.pubSub != nil else { return nil }
        return PlayPubSubPuller.Settings(
            subscription: subscription, verifier: play, discovery: configuration.discovery)
    }

    /// Google Play's voided purchases (DESIGN §5a): read every `Poll=` (not at all with
    /// `Poll=off`, but a push's confirmation still reads them), with `[GooglePlay]`'s verifier.
    static func playPolling(_ configuration: Configuration, _ play: GooglePlayVerifier?) -> PlayVoidedPurchasePoller.Settings? {
        guard let play else { return nil }
        var settings = PlayVoidedPurchasePoller.Settings(
            interval: configuration.notifications.poll, packageNames: configuration.googlePlay.packageNames, verifier: play)
        settings.sharedTurns = configuration.state.isShared
        return settings
    }

    /// `[Notifications] Poll=` for `Kind=appstore` (DESIGN §5a): Get Notification History on
    /// `[Verifier]`'s endpoints (the sandbox too with `AllowSandbox=yes`), signed with its key,
    /// every payload verified by the notification files' own reader. `nil`: `Poll=off`, or
    /// another `Kind=`.
    static func polling(
        _ configuration: Configuration, _ resources: ConfiguredCredentials, _ reader: NotificationFileReader
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
        settings.discovery = configuration.discovery
        return settings
    }

    /// App Store notifications are verified against `RootCertificates=` (Apple's root by
    /// default) and `BundleID=`, whatever the `Kind=` (DESIGN §5a): `Kind=appstore`'s signed-data
    /// verifiers, else ones made here (the sandbox one only with `AllowSandbox=yes`). When the
    /// roots cannot be read, a notification file is refused with that reason — not the daemon:
    /// a `Kind=apple` daemon without Apple's root file keeps working for orders.
    static func notificationReader(_ configuration: Configuration, _ resources: ConfiguredCredentials) -> NotificationFileReader {
        var reader = appStoreNotificationReader(configuration, resources)
        reader.googlePlay = configuration.hasGooglePlay
        return reader
    }

    static func appStoreNotificationReader(_ configuration: Configuration, _ resources: ConfiguredCredentials) -> NotificationFileReader {
        let allowSandbox = configuration.verifier.allowSandbox
        if let appStore = resources.appStore {
            return NotificationFileReader(appStore: .init(production: appStore.production, sandbox: allowSandbox ? appStore.sandbox : nil))
        }
        guard configuration.hasVerifier, configuration.verifier.bundleID != nil else {
            return NotificationFileReader(appStore: nil, unavailable: "[Verifier] BundleID= is not set")
        }
        do {
            let verifiers = try AppStoreCredentials.read(configuration.verifier, key: nil)
            return NotificationFileReader(appStore: .init(production: verifiers.production, sandbox: allowSandbox ? verifiers.sandbox : nil))
        } catch {
            return NotificationFileReader(appStore: nil, unavailable: "[Verifier] RootCertificates= \(error.description)")
        }
    }

    /// The scheduler's settings and senders from `configuration` and the files `resources` read.
    static func scheduler(
        for configuration: Configuration, resources: ConfiguredCredentials, transport: any HTTPTransport
    ) throws(ConfigurationError) -> (settings: Scheduler.Settings, senders: Scheduler.Senders) {
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
        var googlePlay: GooglePlayVerifier?
        if configuration.hasGooglePlay {
            let play = configuration.googlePlay
            guard let account = resources.googlePlayAccount, let packageName = play.packageName else {
                throw missing(configuration.googlePlay.serviceAccount.map { CredentialFiles.keyID($0, section: "GooglePlay", prefix: "ServiceAccount") }
                    ?? "GooglePlay.ServiceAccountCredential")
            }
            let tokenURL = play.tokenURL?.absoluteString ?? account.tokenURI
            // One token for both APIs when a subscription is pulled (DESIGN §5b).
            let tokens = PlayAccessTokenCache(
                account: account,
                endpoint: EndpointSettings(url: tokenURL, timeout: play.timeout, trustAnchors: resources.googlePlayAnchors, proxy: proxy),
                transport: transport, scopes: play.subscription == nil ? [GoogleJWT.scope] : [GoogleJWT.scope, GoogleJWT.pubSubScope])
            let api = endpoint(play.url, timeout: play.timeout, anchors: resources.googlePlayAnchors)
            googlePlay = GooglePlayVerifier(
                api: api, packageName: packageName, otherPackageNames: Array(play.packageNames.dropFirst()),
                allowTestPurchases: play.allowTestPurchases, tokens: tokens, transport: transport)
            if play.subscription != nil {
                // Pub/Sub may hold a pull open a while when nothing waits: not a failure.
                googlePlay?.pubSub = endpoint(play.pubSubURL, timeout: max(play.timeout, .seconds(60)), anchors: resources.googlePlayAnchors)
            }
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
            resolver: AttemptResolver(
                policy: RetryPolicy(configuration.retry), deliveryConfigured: delivery != nil, playFollowUp: configuration.googlePlay.followUp),
            maxInFlight: verifier.maxInFlight, maxRate: verifier.maxRate, burst: verifier.burst,
            circuitThreshold: verifier.circuitThreshold, circuitCooldown: verifier.circuitCooldown,
            circuitMaxCooldown: verifier.circuitMaxCooldown,
            requestTimeout: timeout)
        // A shared store's leases last LeaseTime= and are renewed; SQLite's are released at start.
        settings.leaseTime = configuration.state.isShared ? configuration.state.leaseTime : nil
        settings.sandboxRateFactor = verifier.sandboxRateFactor
        settings.googlePlay = googlePlay.map { _ in Scheduler.PoolLimits(configuration.googlePlay) }
        settings.discovery = configuration.discovery
        settings.verifiers = configuration.verifiers
        var senders = Scheduler.Senders(verifier: orderVerifier, delivery: delivery)
        senders.googlePlay = googlePlay
        senders.revocation = revocation
        senders.consumption = consumption
        return (settings, senders)
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
}
