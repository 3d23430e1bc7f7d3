import Foundation
import ReconcileCore
import ReconcileCrypto

/// Cloud Pub/Sub pull (DESIGN §5b; `docs/protocols/google-play.md` §6) with the verifier's
/// access tokens, and the confirmation of a one-time purchase a pulled notification names. Pub/Sub
/// is another service than the Developer API: what it answers never counts against
/// `googleplay`'s circuit or pauses its bucket (the puller backs off on its own); its requests
/// take `googleplay`'s rate tokens.
extension GooglePlayVerifier {
    /// Why a Pub/Sub request did not do its work, in a few words for the log (never a token).
    public struct PubSubFailure: Error, Sendable, Hashable {
        public var reason: Reason
        /// A refusal that only a change of configuration (the subscription's name, the service
        /// account's role, the URL) mends, rather than time.
        public var isConfiguration: Bool
        /// How long Pub/Sub asked to wait, when it did.
        public var retryAfter: Duration?
    }

    /// `POST {PubSubURL}/v1/{subscription}:pull` for at most `maxMessages` messages.
    public func pull(subscription: String, maxMessages: Int, gate: any EndpointGate) async -> Result<PubSubPullAnswer, PubSubFailure> {
        await pubSubCall(subscription: subscription, verb: "pull", body: PubSubPullAnswer.pullBody(maxMessages: maxMessages), gate: gate) { body in
            try PubSubPullAnswer.parse(body)
        }
    }

    /// `POST {PubSubURL}/v1/{subscription}:acknowledge`: these deliveries are done with.
    public func acknowledge(subscription: String, ackIDs: [String], gate: any EndpointGate) async -> Result<Void, PubSubFailure> {
        guard !ackIDs.isEmpty else { return .success(()) }
        return await pubSubCall(subscription: subscription, verb: "acknowledge", body: PubSubPullAnswer.acknowledgeBody(ackIDs), gate: gate) { _ in () }
    }

    func pubSubCall<Answer>(
        subscription: String, verb: String, body: [UInt8], gate: any EndpointGate, read: @escaping ([UInt8]) throws -> Answer
    ) async -> Result<Answer, PubSubFailure> {
        guard let pubSub else {
            return .failure(PubSubFailure(reason: Reason(.configuration, detail: "no [GooglePlay] Subscription= is configured"), isConfiguration: true))
        }
        guard await gate.acquire(.googlePlay) else {
            return .failure(PubSubFailure(reason: Reason(.endpointCircuitOpen(.googlePlay)), isConfiguration: false))
        }
        var exchanges = Exchanges()
        exchanges.sent = 1  // the token above was this request's
        let path = "/v1/\(subscription):\(verb)"
        let meaning = await exchange(method: "POST", path: path, body: body, exchanges: &exchanges, gate: gate, service: pubSub) { result, now in
            Self.judgePubSub(result, now: now, read: read)
        }
        switch meaning {
        case .answer(let answer):
            return .success(answer)
        case .verdict(.configuration(let reason)):
            return .failure(PubSubFailure(reason: reason, isConfiguration: true))
        case .verdict(.transient(let reason, let retryAfter)):
            return .failure(PubSubFailure(reason: reason, isConfiguration: false, retryAfter: retryAfter))
        case .verdict(let verdict):
            return .failure(PubSubFailure(reason: verdict.failureReason, isConfiguration: false))
        }
    }

    /// What a Pub/Sub answer means. Never the endpoint's failure: Pub/Sub is not the
    /// Developer API, whose circuit must not open for it.
    static func judgePubSub<Answer>(
        _ result: HTTPExchangeResult, now: Date, read: ([UInt8]) throws -> Answer
    ) -> EndpointExchange.Judgement<Answer> {
        guard let response = result.response else {
            var judgement = EndpointExchange.Judgement<Answer>.of(HTTPAnswerClassifier.classify(result, now: now)) { _ in
                .init(.verdict(.transient(Reason(.unexpected))))
            }
            judgement.observation = .healthy
            judgement.rateLimited = false
            return judgement
        }
        let status = response.status
        switch status {
        case 200:
            do {
                return .init(.answer(try read(response.body)), detail: "Pub/Sub \(status)")
            } catch {
                let reason = Reason(.unparseableAnswer, detail: "\(error)")
                return .init(.verdict(.transient(reason)), detail: reason.description)
            }
        case 401, 403:
            let reason = Reason(
                .http(status),
                detail: "Pub/Sub refuses the service account: it needs the role roles/pubsub.subscriber on the subscription")
            return .init(.verdict(.configuration(reason)), detail: reason.description)
        case 404:
            let reason = Reason(.http(status), detail: "Pub/Sub knows no such subscription (Subscription=, PubSubURL=)")
            return .init(.verdict(.configuration(reason)), detail: reason.description)
        case 408, 429, 500...599:
            let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
            let reason = Reason(.http(status))
            return .init(.verdict(.transient(reason, retryAfter: retryAfter)), detail: reason.description)
        default:
            let reason = Reason(.http(status), detail: "Pub/Sub refuses the request")
            return .init(.verdict(.configuration(reason)), detail: reason.description)
        }
    }

    /// What Google says of a one-time purchase a notification named.
    public enum OneTimeLookup: Sendable, Hashable {
        /// Google's purchase for the token.
        case purchase(PlayPurchase)
        /// Google does not confirm it (an unknown or expired token, a refusal): nothing to keep.
        case unconfirmed(Reason)
        /// Not asked, or no answer: ask again later.
        case unavailable(Reason)
    }

    /// `purchases.products.get` for a one-time purchase a notification named, taking its rate
    /// token from `gate` first (no attempt took one for it).
    public func lookUpOneTime(package: String, product: String, token: String, gate: any EndpointGate) async -> OneTimeLookup {
        guard packageNames.contains(package) else {
            return .unconfirmed(Reason(.foreignPackage, detail: ConfiguredVerifiers.foreignPackageDetail(package, configured: packageNames)))
        }
        guard await gate.acquire(.googlePlay) else { return .unavailable(Reason(.endpointCircuitOpen(.googlePlay))) }
        var exchanges = Exchanges()
        switch await get(package: package, product: product, token: token, exchanges: &exchanges, gate: gate) {
        case .purchase(let purchase):
            return .purchase(purchase)
        case .verdict(.reject(let reason)), .verdict(.escalate(let reason)):
            return .unconfirmed(reason)
        case .verdict(.limitedTransient(_, let then)):
            return .unconfirmed(then)
        case .verdict(let verdict):
            return .unavailable(verdict.failureReason)
        }
    }

    /// What Google's answer makes of a one-time purchase a notification named (a pulled message,
    /// a push file): ``lookUpOneTime(package:product:token:gate:)``, then
    /// ``PlayDiscovery/confirm(_:token:tokenDigest:package:productID:allowTestPurchases:via:)``.
    public enum OneTimeConfirmation: Sendable, Hashable {
        /// Paid: kept as this discovered purchase.
        case purchase(DiscoveredPurchase)
        /// Not paid yet: to be asked about again later.
        case pending(Reason)
        /// Nothing to keep (cancelled, a test purchase not allowed).
        case notKept(Reason)
        /// Google does not confirm the token: nothing to keep.
        case unconfirmed(Reason)
        /// Google could not be asked: to be asked again later.
        case unavailable(Reason)
    }

    /// Asks Google about the one-time purchase of `sku` that token `token` of `package` (this
    /// verifier's first package when the notification names none) stands for.
    public func confirmOneTime(
        package: String?, sku: String?, token: String, via: DiscoveredPurchase.Via, gate: any EndpointGate
    ) async -> OneTimeConfirmation {
        let package = package ?? packageName
        let product = sku ?? ""
        switch await lookUpOneTime(package: package, product: product, token: token, gate: gate) {
        case .unavailable(let reason):
            return .unavailable(reason)
        case .unconfirmed(let reason):
            return .unconfirmed(reason)
        case .purchase(let purchase):
            switch PlayDiscovery.confirm(
                purchase, token: token, tokenDigest: SHA256.hexDigest(Array(token.utf8)), package: package, productID: product,
                allowTestPurchases: allowTestPurchases, via: via)
            {
            case .purchase(let discovered): return .purchase(discovered)
            case .pending(let reason): return .pending(reason)
            case .notKept(let reason): return .notKept(reason)
            }
        }
    }
}
