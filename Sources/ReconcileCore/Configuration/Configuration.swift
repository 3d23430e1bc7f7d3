import Foundation
import ReconcileFoundation

/// The daemon's whole configuration (DESIGN §9), with every default in one place.
///
/// Built from files by ``ConfigurationParser``; `etc/reconciled.conf` documents every key.
/// Paths are absolute (relative ones were resolved against the file that named them).
public struct Configuration: Sendable, Hashable {
    public var spool = SpoolSettings()
    public var state = StateSettings()
    public var verifier = VerifierSettings()
    /// Whether `[Verifier]` is configured (`Kind=` set). Without it only `[GooglePlay]` verifies.
    public var hasVerifier = true
    /// `[GooglePlay]`'s keys (defaults unless ``hasGooglePlay``).
    public var googlePlay = GooglePlaySettings()
    /// Whether `[GooglePlay]` is configured (any of its keys set).
    public var hasGooglePlay = false
    /// `[Notifications]`: pulling store notifications (DESIGN §5a).
    public var notifications = NotificationSettings()
    /// `[Discovery]`: purchases the phone never sent (DESIGN §5b).
    public var discovery = DiscoverySettings()
    public var delivery = DeliverySettings()
    /// `[Revocation]`: where refunds and their reversals are told (absent without `URL=`).
    public var revocation = RevocationSettings()
    public var retry = RetrySettings()
    public var escalation = EscalationSettings()
    public var control = ControlSettings()
    public var daemon = DaemonSettings()

    /// The files it was read from, main file first, then drop-ins in the order applied.
    public var sourcePaths: [String] = []
    /// Where each key was set, for problems found after parsing (not compared).
    public var keyLocations = KeyLocations()

    public init() {}

    /// A problem with the value of `id` (`Section.Key`), located at the line that set it.
    public func problem(_ id: String, _ message: String) -> ConfigurationProblem {
        keyLocations.problem(id, message, mainPath: sourcePaths.first ?? "(none)")
    }

    /// `[Spool]`: where work enters (DESIGN §3).
    public struct SpoolSettings: Sendable, Hashable {
        public var directory = "/var/spool/reconciled"
        /// Larger spool files are quarantined unread.
        public var maxFileSize = 1024 * 1024
        /// Rescan `incoming/` this often, for filesystems without inotify; `nil` is off.
        public var rescanInterval: Duration?
        public init() {}
    }

    /// `[State]`: the store (DESIGN §7).
    public struct StateSettings: Sendable, Hashable {
        public var database = "/var/lib/reconciled/orders.db"
        /// Receipts and raw files of finished or cancelled orders older than this are pruned;
        /// `nil` keeps them forever.
        public var keepFinished: Duration? = .seconds(90 * 86_400)
        /// The PostgreSQL password (shared store only), apart from the URI.
        public var password: CredentialSource?
        /// How long a lease on an order lasts before any node may rescue it (shared store);
        /// attempts still running renew theirs at half of it.
        public var leaseTime: Duration = .seconds(120)
        public init() {}

        /// Whether ``database`` is a PostgreSQL connection URI (a shared store) rather than an
        /// SQLite path.
        public var isShared: Bool { StateDatabase.isPostgreSQL(database) }
    }

    /// `[Verifier]`: the server that verifies orders (DESIGN §5, §6).
    public struct VerifierSettings: Sendable, Hashable {
        public var kind: VerifierKind = .apple
        public var url = URL(string: "https://buy.itunes.apple.com/verifyReceipt")!
        /// The sandbox endpoint; for `apple` defaults to Apple's.
        public var sandboxURL: URL?
        public var bundleID: String?
        public var allowSandbox = false
        /// Apple's shared secret (`Kind=apple`).
        public var sharedSecret: CredentialSource?
        /// Bearer token for the merchant endpoint (`Kind=http`).
        public var token: CredentialSource?
        /// `Kind=appstore`: the issuer id of the App Store Connect team (a UUID).
        public var issuerID: String?
        /// `Kind=appstore`: the In-App Purchase key's id.
        public var keyID: String?
        /// `Kind=appstore`: the In-App Purchase key (PKCS#8 PEM).
        public var privateKey: CredentialSource?
        /// `Kind=appstore`: the app's Apple id (a number), checked in production answers.
        public var appAppleID: String?
        /// `Kind=appstore`: PEM or DER files of the roots signed transactions must chain to.
        public var rootCertificates = [VerifierSettings.appleRootCertificate]
        /// An extra trust anchor for TLS.
        public var caFile: String?
        public var timeout: Duration = .seconds(10)
        public var maxInFlight = 16
        /// Requests per second per endpoint; `nil` is unlimited (`MaxRate=infinity`).
        public var maxRate: Double? = 50
        public var burst = 10
        public var circuitThreshold = 10
        public var circuitCooldown: Duration = .seconds(5)
        public var circuitMaxCooldown: Duration = .seconds(300)
        public init() {}

        /// The sandbox URL in effect: the configured one, or Apple's for `Kind=apple` and
        /// `Kind=appstore`.
        public var effectiveSandboxURL: URL? {
            if let sandboxURL { return sandboxURL }
            switch kind {
            case .apple: return URL(string: "https://sandbox.itunes.apple.com/verifyReceipt")!
            case .appstore: return Self.appStoreSandboxURL
            case .http: return nil
            }
        }

        /// The App Store Server API's hosts (`docs/protocols/apple.md` §2.1).
        public static let appStoreProductionURL = URL(string: "https://api.storekit.apple.com")!
        public static let appStoreSandboxURL = URL(string: "https://api.storekit-sandbox.apple.com")!
        /// Apple Root CA - G3, as installed from the repository's `etc/`.
        public static let appleRootCertificate = "/etc/reconciled/apple-root-ca-g3.pem"

        /// The sandbox's share of `MaxRate=`: Apple gives the App Store Server API's sandbox a
        /// tenth of production's limits; verifyReceipt publishes none.
        public var sandboxRateFactor: Double { kind == .appstore ? 0.1 : 1 }
    }

    /// The verifiers this configuration has, for deciding which orders can be verified.
    public var verifiers: ConfiguredVerifiers {
        ConfiguredVerifiers(kind: hasVerifier ? verifier.kind : nil, googlePlay: hasGooglePlay, playPackages: hasGooglePlay ? googlePlay.packageNames : [])
    }

    /// `[GooglePlay]`: Google Play orders (DESIGN §5 "Google Play").
    public struct GooglePlaySettings: Sendable, Hashable {
        /// `PackageName=`: the Android packages whose purchases this daemon accepts, in the
        /// order written (a space-separated list); an order naming another is quarantined.
        public var packageNames: [String] = []
        /// The first of ``packageNames``: for orders without `package_name`.
        public var packageName: String? { packageNames.first }
        /// The service account's JSON key.
        public var serviceAccount: CredentialSource?
        public var url = URL(string: "https://androidpublisher.googleapis.com")!
        /// Where grants are posted; `nil`: the key's `token_uri`.
        public var tokenURL: URL?
        public var timeout: Duration = .seconds(10)
        public var maxInFlight = 16
        public var maxRate: Double? = 50
        public var burst = 10
        public var circuitThreshold = 10
        public var circuitCooldown: Duration = .seconds(5)
        public var circuitMaxCooldown: Duration = .seconds(300)
        public var caFile: String?
        public var acknowledge = true
        public var consume = false
        public var allowTestPurchases = false
        /// `Subscription=`: the Pub/Sub subscription Play's real-time notifications are pulled
        /// from (`projects/P/subscriptions/S`, DESIGN §5b); `nil`: push files only.
        public var subscription: String?
        /// `PubSubURL=`: where that subscription is pulled.
        public var pubSubURL = URL(string: "https://pubsub.googleapis.com")!
        public init() {}

        /// What a finished order owes Google under these settings.
        public var followUp: PlayFollowUp {
            PlayFollowUp(acknowledge: acknowledge, consume: consume, packageName: packageName)
        }
    }

    /// `[Delivery]`: where verified grants are delivered (DESIGN §5). Without a URL, `verified`
    /// finishes at once.
    public typealias DeliverySettings = MerchantEndpointSettings

    /// `[Notifications]` (DESIGN §5a, §9): how store notifications are pulled, and how a
    /// `CONSUMPTION_REQUEST` is answered.
    public struct NotificationSettings: Sendable, Hashable {
        /// `Poll=`: how often `Kind=appstore` asks Get Notification History for what arrived
        /// since its checkpoint; `nil` (`off`): never (notification files only).
        public var poll: Duration? = .seconds(3600)
        /// `ConsumptionAnswer=`: answer Apple's `CONSUMPTION_REQUEST` (needs `Kind=appstore`).
        public var consumptionAnswer = false
        /// `CustomerConsented=`: without it no request is answered.
        public var customerConsented = false
        /// `SampleContentProvided=`: sent in every answer (a required field).
        public var sampleContentProvided = false
        /// `RefundPreference=`; `nil`: not sent.
        public var refundPreference: ConsumptionPolicy.RefundPreference?

        public init() {}

        /// What the notification rules answer a `CONSUMPTION_REQUEST` with.
        public var consumption: ConsumptionPolicy {
            ConsumptionPolicy(
                answer: consumptionAnswer, customerConsented: customerConsented, sampleContentProvided: sampleContentProvided,
                refundPreference: refundPreference)
        }
    }

    /// `[Revocation]`: where the merchant is told of refunds and their reversals (DESIGN §5a).
    /// Without a URL the events are only logged and recorded.
    public typealias RevocationSettings = MerchantEndpointSettings

    /// `[Retry]`: backoff and limits (DESIGN §6).
    public struct RetrySettings: Sendable, Hashable {
        public var initialDelay: Duration = .seconds(30)
        public var multiplier = 2.0
        public var maxDelay: Duration = .seconds(3600)
        public var jitter: JitterMode = .full
        public var maxAttempts = 20
        public var maxAge: Duration = .seconds(3 * 86_400)
        public init() {}
    }

    /// `[Escalation]`: telling a person (DESIGN §6).
    public struct EscalationSettings: Sendable, Hashable {
        /// argv of the command run per escalation; `nil` runs nothing.
        public var command: [String]?
        /// At most this many commands per second.
        public var commandRate = 1.0
        public var timeout: Duration = .seconds(30)
        public init() {}
    }

    /// `[Control]`: the control socket (DESIGN §10).
    public struct ControlSettings: Sendable, Hashable {
        public var socket = "/run/reconciled/control.sock"
        public init() {}
    }

    /// `[Daemon]`: process-wide settings (DESIGN §8).
    public struct DaemonSettings: Sendable, Hashable {
        /// How long a stop waits for in-flight requests.
        public var drainTimeout: Duration = .seconds(15)
        /// Prometheus text file, written atomically; `nil` is off.
        public var metricsFile: String?
        /// The proxy verification and delivery requests go through (not those to loopback
        /// addresses); `nil`: none, whatever the environment's `http_proxy` and friends say.
        public var proxy: URL?
        /// This daemon's name among the nodes sharing a PostgreSQL store; `nil`: the host name,
        /// plus the instance of a templated unit.
        public var node: String?
        public init() {}
    }
}

/// Where a secret comes from: a systemd credential name (read from `$CREDENTIALS_DIRECTORY`) or
/// a file path.
public enum CredentialSource: Sendable, Hashable, CustomStringConvertible {
    case credential(String)
    case file(String)

    public var description: String {
        switch self {
        case .credential(let name): "credential \(name)"
        case .file(let path): "file \(path)"
        }
    }
}
