import Foundation
import ReconcileCore

/// Support's look-ups by the customer's store order id (`reconcilectl lookup` and `recover`;
/// DESIGN §5b), through the daemon, which holds the credentials: App Store Look Up Order ID with
/// `Kind=appstore`'s key, Google Play `orders.get` with `[GooglePlay]`'s service account. Each
/// request takes a token of the endpoint's bucket, as an order's attempt does.
public struct SupportLookup: Sendable {
    /// `Kind=appstore`'s verifier; `nil` when the App Store cannot be asked (``appStoreMissing`` says why).
    public var appStore: AppStoreVerifier?
    public var appStoreMissing: String
    /// `[GooglePlay]`'s verifier; `nil` without that section.
    public var googlePlay: GooglePlayVerifier?

    public init(appStore: AppStoreVerifier?, appStoreMissing: String, googlePlay: GooglePlayVerifier?) {
        self.appStore = appStore
        self.appStoreMissing = appStoreMissing
        self.googlePlay = googlePlay
    }

    /// Why a look-up gave no purchases, in words a support person can act on.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Kind: String, Sendable, Hashable {
            /// The store knows no such order.
            case notFound = "not_found"
            /// The daemon is not set up to ask that store.
            case configuration
            /// The store did not answer now (429, an outage, an open circuit): try again later.
            case unavailable
            /// The store's answer failed verification: nothing in it is believed.
            case untrusted
        }

        public var kind: Kind
        public var description: String

        public init(kind: Kind, description: String) {
            self.kind = kind
            self.description = description
        }

        public static func notFound(_ text: String) -> Failure { Failure(kind: .notFound, description: text) }
        public static func configuration(_ text: String) -> Failure { Failure(kind: .configuration, description: text) }
        public static func unavailable(_ text: String) -> Failure { Failure(kind: .unavailable, description: text) }
        public static func untrusted(_ text: String) -> Failure { Failure(kind: .untrusted, description: text) }

        /// A verdict of `store`'s exchange: its wait asked for (a 429's `Retry-After`) in the words.
        init(_ verdict: VerifierOutcome.Verdict, store: String) {
            let reason = verdict.failureReason
            switch verdict {
            case .configuration:
                self = .configuration("\(store) refuses the daemon's credentials or request: \(reason)")
            case .transient(_, let retryAfter?):
                self = .unavailable("\(store) asks to wait (\(reason)): try again in \(Int(retryAfter.components.seconds) + 1) s")
            case .notSent:
                self = .unavailable("not sent: \(reason); see reconcilectl status")
            default:
                self = .unavailable("\(store) did not answer usefully now (\(reason)): try again later")
            }
        }
    }

    /// The purchases of `id`, each as the store signed or confirmed it. `package` picks a
    /// Play app when `[GooglePlay] PackageName=` names several (the first by default).
    public func lookUp(_ id: StoreOrderID, package: String?, gate: any EndpointGate) async -> Result<[LookedUpPurchase], Failure> {
        switch id {
        case .appStore(let orderID):
            guard let appStore else { return .failure(.configuration(appStoreMissing)) }
            return await appStore.lookUpOrder(orderID, gate: gate)
        case .googlePlay(let orderID):
            guard let googlePlay else {
                return .failure(.configuration("Google Play order ids are looked up with a [GooglePlay] section (PackageName=, ServiceAccountFile=); this daemon has none"))
            }
            return await googlePlay.lookUpOrder(orderID, package: package ?? googlePlay.packageName, gate: gate)
        }
    }

    /// Whether `[GooglePlay] AllowTestPurchases=yes`: `recover` makes orders of license testers' purchases.
    public var allowTestPurchases: Bool { googlePlay?.allowTestPurchases ?? false }
}
