import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation

/// Reads a store notification file (DESIGN §3, §5a) into the form the store keeps, after
/// verifying it: an App Store Server Notification V2 (`{"signedPayload":…}`) is checked as
/// signed transactions are — chain to `RootCertificates=`, Apple's marker extensions, the
/// signature, the bundle id and the environment — and so is the `signedTransactionInfo` inside
/// it. Nothing unverified comes out of it; a file that does not verify is a problem named by the
/// check that failed (`invalid_chain`, `wrong_bundle`, …), never by the payload's contents.
public struct NotificationFileReader: Sendable {
    /// The verifiers of `[Verifier] Kind=appstore` (production, and sandbox when allowed);
    /// `nil`: App Store notifications cannot be verified by this configuration.
    public var appStore: AppStoreVerifiers?

    /// Signed-data verifiers for the environments this daemon accepts.
    public struct AppStoreVerifiers: Sendable {
        public var production: SignedDataVerifier
        /// `AllowSandbox=yes`: sandbox notifications are taken too.
        public var sandbox: SignedDataVerifier?

        public init(production: SignedDataVerifier, sandbox: SignedDataVerifier?) {
            self.production = production
            self.sandbox = sandbox
        }
    }

    /// Why ``appStore`` is `nil`, for the reason written beside a refused file.
    public var unavailable: String?
    /// A `[GooglePlay]` section, whose API confirms what a Pub/Sub push says: pushes are taken
    /// in (recorded; the voided purchases list is then read). Without it a push is refused —
    /// nothing could confirm it.
    public var googlePlay: Bool

    public init(appStore: AppStoreVerifiers?, unavailable: String? = nil, googlePlay: Bool = false) {
        self.appStore = appStore
        self.unavailable = unavailable
        self.googlePlay = googlePlay
    }

    /// The notification a file holds, verified.
    public func read(_ bytes: [UInt8], kind: SpoolDocument, now: Date) throws(OrderFileProblem) -> StoreNotification {
        switch kind {
        case .order:
            throw OrderFileProblem(.malformedNotification, "not a store notification")
        case .playNotification:
            return try readPlayPush(bytes).notification
        case .appStoreNotification:
            return try readAppStore(bytes, now: now)
        }
    }

    /// A Pub/Sub push, parsed, and the form kept of it: recorded, never applied — it changes an
    /// order only once `voidedpurchases.list` confirms it (DESIGN §5a).
    public func readPlayPush(_ bytes: [UInt8]) throws(OrderFileProblem) -> (push: PlayNotification, notification: StoreNotification) {
        guard googlePlay else {
            throw OrderFileProblem(
                .notificationNotVerifiable,
                "a Google Play notification (Pub/Sub push), which only the Play API can confirm, and this configuration has no [GooglePlay] section")
        }
        let push: PlayNotification
        do {
            push = try PlayNotification.parse(bytes)
        } catch {
            throw OrderFileProblem(.malformedNotification, error.description)
        }
        return (push, StoreNotification.playPush(push))
    }

    func readAppStore(_ bytes: [UInt8], now: Date) throws(OrderFileProblem) -> StoreNotification {
        guard appStore != nil else {
            throw OrderFileProblem(
                .notificationNotVerifiable,
                "an App Store notification, which this configuration cannot verify: \(unavailable ?? "it has no [Verifier] BundleID= and RootCertificates=")")
        }
        guard case .object(let object)? = try? JSONParser(maximumDepth: 8).parse(bytes), let jws = object["signedPayload"]?.stringValue else {
            throw OrderFileProblem(.malformedNotification, "the file holds no \"signedPayload\" string")
        }
        return try verifyAppStore(signedPayload: jws, via: .file, now: now)
    }

    /// An App Store notification's `signedPayload`, verified with its `signedTransactionInfo`
    /// (chain, marker extensions, signature, bundle, environment): what a notification file
    /// holds, and what polling Get Notification History returns (`via`). The same checks, and the
    /// same problems (named by the check, never holding the JWS), whichever way it came.
    public func verifyAppStore(signedPayload jws: String, via: StoreNotification.Via, now: Date) throws(OrderFileProblem) -> StoreNotification {
        guard let verifiers = appStore else {
            throw OrderFileProblem(
                .notificationNotVerifiable,
                "an App Store notification; it is verified with [Verifier] Kind=appstore's RootCertificates= and BundleID=, which this configuration does not have")
        }
        let payload = try Self.verify(jws, with: verifiers, now: now)
        let notification: AppStoreNotification
        do {
            notification = try AppStoreNotification.parse(payload.json)
        } catch {
            throw OrderFileProblem(.malformedNotification, error.description)
        }
        var transaction: AppStoreTransaction?
        if let signed = notification.signedTransactionInfo {
            // The transaction is signed on its own; it must verify in the same environment.
            let verifier = payload.environment == .sandbox ? (verifiers.sandbox ?? verifiers.production) : verifiers.production
            let verified: VerifiedPayload
            do {
                verified = try verifier.verify(signed, now: now)
            } catch {
                throw Self.problem(error, what: "the notification's signedTransactionInfo")
            }
            do {
                transaction = try AppStoreTransaction.parse(verified.json)
            } catch {
                throw OrderFileProblem(.malformedNotification, "signedTransactionInfo: \(error.description)")
            }
        }
        return StoreNotification.appStore(notification, transaction: transaction, signedTransaction: notification.signedTransactionInfo, via: via)
    }

    /// Verifies with the production verifier, and with the sandbox one when it is allowed and
    /// the payload says it comes from there.
    static func verify(_ jws: String, with verifiers: AppStoreVerifiers, now: Date) throws(OrderFileProblem) -> VerifiedPayload {
        do {
            return try verifiers.production.verify(jws, now: now)
        } catch .wrongEnvironment(let found) where found == AppStoreEnvironment.sandbox.rawValue && verifiers.sandbox != nil {
            do {
                return try verifiers.sandbox!.verify(jws, now: now)
            } catch {
                throw problem(error, what: "the notification")
            }
        } catch {
            throw problem(error, what: "the notification")
        }
    }

    /// The quarantine reason for a signed-data failure (its detail never holds the JWS).
    static func problem(_ error: SignedDataError, what: String) -> OrderFileProblem {
        let code: OrderFileProblem.Code =
            switch error {
            case .malformed: .malformedNotification
            case .unsupportedAlgorithm: .unsupportedAlgorithm
            case .missingX5C: .missingX5C
            case .invalidChain: .invalidChain
            case .badSignature: .badSignature
            case .wrongBundle: .wrongBundle
            case .wrongEnvironment: .wrongEnvironment
            }
        return OrderFileProblem(code, "\(what) does not verify: \(error.description)")
    }
}
