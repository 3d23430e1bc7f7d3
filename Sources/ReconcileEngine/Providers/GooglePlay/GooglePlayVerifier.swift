import Foundation
import ReconcileCore
import ReconcileCrypto

/// `[GooglePlay]`: Google Play one-time products (DESIGN §5 "Google Play";
/// `docs/protocols/google-play.md`). Verifies an order with `purchases.products.get` for its package,
/// product and purchase token, and sends the follow-ups a finished order owes Google
/// (`purchases.products.acknowledge` or `consume`) as outbox actions — after looking at the
/// purchase first, so that one already acknowledged or consumed is skipped, not repeated.
///
/// Every request carries an access token from ``PlayAccessTokenCache``; a 401 drops it and the
/// request is sent once more with a fresh one, then it is a configuration error.
public struct GooglePlayVerifier: OrderVerifier, OutboxSender {
    public var work: Set<WorkKind> { [.verifyPlay] }
    /// `[GooglePlay] URL=`: the API's base URL.
    public var api: EndpointSettings
    /// `[GooglePlay] PackageName=`'s first package: for orders that name none.
    public var packageName: String
    /// Every package of `PackageName=` (``packageName`` first): the only ones whose purchases
    /// are verified; an order naming another is escalated `foreign_package`, never asked about.
    public var packageNames: [String]
    public var allowTestPurchases: Bool
    public var tokens: PlayAccessTokenCache
    public var transport: any HTTPTransport
    public var maximumResponseSize = 64 << 10
    /// `[GooglePlay] PubSubURL=`, when `Subscription=` is pulled (DESIGN §5b); its tokens come
    /// from ``tokens``, which then ask for Pub/Sub's scope too.
    public var pubSub: EndpointSettings?

    /// - Parameter otherPackageNames: `PackageName=`'s packages after the first.
    public init(
        api: EndpointSettings, packageName: String, otherPackageNames: [String] = [], allowTestPurchases: Bool, tokens: PlayAccessTokenCache,
        transport: any HTTPTransport
    ) {
        self.api = api
        self.packageName = packageName
        self.packageNames = [packageName] + otherPackageNames.filter { $0 != packageName }
        self.allowTestPurchases = allowTestPurchases
        self.tokens = tokens
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .googlePlay }
    public var endpoint: VerificationEndpoint { .googlePlay }
    public var gatingEndpoints: [VerificationEndpoint] { [.googlePlayToken] }

    // MARK: - Verification

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        var exchanges = Exchanges()
        guard let token = order.proof.purchaseToken else {
            return VerifierOutcome(records: [], verdict: .escalate(Reason(.noUsableProof, detail: "the order carries no purchase token")))
        }
        let package = order.proof.packageName ?? packageName
        // The order's own package_name must not choose which app's purchase is accepted (an
        // order stored by an older version, or by a daemon configured for other packages).
        guard packageNames.contains(package) else {
            return VerifierOutcome(
                records: [],
                verdict: .escalate(Reason(.foreignPackage, detail: ConfiguredVerifiers.foreignPackageDetail(package, configured: packageNames))))
        }
        let step = await get(package: package, product: order.productID, token: token, exchanges: &exchanges, gate: gate)
        let verdict: VerifierOutcome.Verdict
        switch step {
        case .verdict(let outcome):
            verdict = outcome
        case .purchase(let purchase):
            switch PlayMatcher.judge(purchase, for: order.playKey, allowTestPurchases: allowTestPurchases) {
            case .purchased:
                let key = PlayMatcher.claimKey(orderID: purchase.orderID, tokenDigest: SHA256.hexDigest(Array(token.utf8)))
                verdict = .playPurchase(PlayMatch(purchase: purchase, claimKey: key, packageName: package))
            case .pending(let reason): verdict = .transient(reason)
            case .reject(let reason): verdict = .reject(reason)
            case .escalate(let reason): verdict = .escalate(reason)
            }
        }
        return VerifierOutcome(records: exchanges.records, verdict: verdict)
    }

    // MARK: - Acknowledge and consume

    public func send(_ claimed: ClaimedAction, gate: any EndpointGate) async -> OutboxOutcome {
        var exchanges = Exchanges()
        let action = claimed.action
        guard action.kind == .playAcknowledge || action.kind == .playConsume else {
            return OutboxOutcome(records: [], verdict: .escalate(Reason(.unknownAction, detail: "\(action.kind.rawValue) is not Google Play's")))
        }
        guard let token = claimed.proof.purchaseToken else {
            return OutboxOutcome(records: [], verdict: .escalate(Reason(.purchaseTokenGone, detail: "the order no longer holds its purchase token")))
        }
        let package = action.payloadText("package_name") ?? claimed.proof.packageName ?? packageName
        let product = action.payloadText("product_id") ?? claimed.productID
        let verb = action.kind == .playConsume ? "consume" : "acknowledge"
        // Look first: one done already (by us before a crash, or by the app) is not done twice.
        switch await lookBeforeAction(action.kind, package: package, product: product, token: token, exchanges: &exchanges, gate: gate) {
        case .decided(let verdict):
            return OutboxOutcome(records: exchanges.records, verdict: verdict)
        case .owed:
            break
        }
        guard await gate.acquire(.googlePlay) else {
            return OutboxOutcome(records: exchanges.records, verdict: .notSent(Reason(.endpointCircuitOpen(.googlePlay))))
        }
        let path = Self.purchasePath(package: package, product: product, token: token) + ":\(verb)"
        let body: [UInt8] = action.kind == .playConsume ? [] : Array("{}".utf8)
        let answer = await exchange(method: "POST", path: path, body: body, exchanges: &exchanges, gate: gate, judge: Self.judgeAction)
        switch answer {
        case .verdict(let verdict):
            return OutboxOutcome(records: exchanges.records, verdict: Self.outboxVerdict(verdict))
        case .answer(.done):
            return OutboxOutcome(records: exchanges.records, verdict: .done(Reason(verb == "consume" ? .consumed : .acknowledged)))
        case .answer(.recheck(let reason)):
            // Google says the purchase is in no state for it: look again and decide.
            switch await lookBeforeAction(action.kind, package: package, product: product, token: token, exchanges: &exchanges, gate: gate) {
            case .decided(let verdict):
                return OutboxOutcome(records: exchanges.records, verdict: verdict)
            case .owed:
                return OutboxOutcome(
                    records: exchanges.records,
                    verdict: .escalate(reason.adding("Google refuses to \(verb) a purchase it says is not done")))
            }
        }
    }

    /// What looking at the purchase decides before an acknowledgement or consumption.
    enum Look {
        case decided(OutboxOutcome.Verdict)
        /// Still owed: send it.
        case owed
    }

    func lookBeforeAction(
        _ kind: OutboxKind, package: String, product: String, token: String, exchanges: inout Exchanges, gate: any EndpointGate
    ) async -> Look {
        switch await get(package: package, product: product, token: token, exchanges: &exchanges, gate: gate) {
        case .verdict(let verdict):
            return .decided(Self.outboxVerdict(verdict))
        case .purchase(let purchase):
            if kind == .playConsume && purchase.isConsumed {
                return .decided(.skipped(Reason(.alreadyConsumed, detail: "Google says the purchase is consumed")))
            }
            if kind == .playAcknowledge && purchase.isAcknowledged {
                return .decided(.skipped(Reason(.alreadyAcknowledged, detail: "Google says the purchase is acknowledged")))
            }
            if purchase.purchaseState == PlayPurchase.cancelled {
                return .decided(.escalate(Reason(.purchaseCancelled, detail: "Google says the purchase was cancelled since it was verified")))
            }
            return .owed
        }
    }

    /// An order verdict as an outbox verdict.
    static func outboxVerdict(_ verdict: VerifierOutcome.Verdict) -> OutboxOutcome.Verdict {
        switch verdict {
        case .transient(let reason, let retryAfter): .transient(reason, retryAfter: retryAfter)
        case .limitedTransient(let reason, _): .transient(reason)
        case .configuration(let reason): .configuration(reason)
        case .notSent(let reason): .notSent(reason)
        case .reject(let reason), .escalate(let reason): .escalate(reason)
        default: .transient(Reason(.playUnexpectedAnswer))
        }
    }

    // MARK: - Exchanges

    /// The requests of one attempt so far.
    struct Exchanges {
        var records: [AttemptRecord] = []
        var sent = 0
    }

    /// What `purchases.products.get` gave.
    enum Get {
        case purchase(PlayPurchase)
        case verdict(VerifierOutcome.Verdict)
    }

    func get(package: String, product: String, token: String, exchanges: inout Exchanges, gate: any EndpointGate) async -> Get {
        // The scheduler took the first request's token; every other takes its own.
        if exchanges.sent > 0 {
            guard await gate.acquire(.googlePlay) else { return .verdict(.notSent(Reason(.endpointCircuitOpen(.googlePlay)))) }
        }
        let path = Self.purchasePath(package: package, product: product, token: token)
        switch await exchange(method: "GET", path: path, body: [], exchanges: &exchanges, gate: gate, judge: Self.judgePurchase) {
        case .verdict(let verdict): return .verdict(verdict)
        case .answer(let purchase): return .purchase(purchase)
        }
    }

    /// One request with an access token, to the Developer API or (`service`) another of
    /// Google's APIs the same token serves; after a 401, once more with a fresh token.
    func exchange<Answer>(
        method: String, path: String, body: [UInt8], exchanges: inout Exchanges, gate: any EndpointGate, service: EndpointSettings? = nil,
        judge: (HTTPExchangeResult, Date) -> EndpointExchange.Judgement<Answer>
    ) async -> EndpointExchange.Judgement<Answer>.Meaning {
        var refreshed = false
        while true {
            let answer = await tokens.token(gate: gate)
            if let record = answer.record { exchanges.records.append(record) }
            let access: String
            switch answer.token {
            case .success(let token): access = token
            case .failure(.configuration(let reason)): return .verdict(.configuration(reason))
            case .failure(.unavailable(let reason)): return .verdict(.notSent(reason))
            }
            if exchanges.sent > 0 && refreshed {
                guard await gate.acquire(.googlePlay) else { return .verdict(.notSent(Reason(.endpointCircuitOpen(.googlePlay)))) }
            }
            exchanges.sent += 1
            var settings = service ?? api
            settings.bearerToken = access
            let request = settings.request(
                method: method, url: AppStoreVerifier.join(settings.url, path), headers: settings.headers([]), body: body,
                maximumResponseSize: maximumResponseSize)
            var unauthorized = false
            let (record, meaning) = await EndpointExchange(transport: transport, gate: gate).send(request, to: .googlePlay) { result, now in
                var judgement = judge(result, now)
                if result.response?.status == 401 && !refreshed {
                    // Not yet a configuration error: the token may just have expired early.
                    unauthorized = true
                    judgement.observation = .healthy
                }
                return judgement
            }
            exchanges.records.append(record)
            guard unauthorized, !refreshed else { return meaning }
            // The token expired or was revoked early: drop it and try once more with a new one.
            await tokens.invalidate(access)
            refreshed = true
        }
    }

    /// `/androidpublisher/v3/applications/{package}/purchases/products/{product}/tokens/{token}`.
    static func purchasePath(package: String, product: String, token: String) -> String {
        "/androidpublisher/v3/applications/\(AppStoreVerifier.pathComponent(package))/purchases/products/"
            + "\(AppStoreVerifier.pathComponent(product))/tokens/\(AppStoreVerifier.pathComponent(token))"
    }

    /// A `purchases.products.get` answer: the purchase (its fields in the history), or a verdict.
    static func judgePurchase(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<PlayPurchase> {
        guard let response = result.response else {
            return .of(HTTPAnswerClassifier.classify(result, now: now)) { _ in .init(.verdict(.transient(Reason(.unexpected)))) }
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        let verdict = PlayAnswerClassifier.classify(status: response.status, body: response.body, retryAfter: retryAfter)
        switch verdict {
        case .answer:
            return readBody(response) { body in
                let purchase = try PlayPurchase.parse(body)
                return .init(.answer(purchase), detail: purchase.summary, verifierStatus: purchase.purchaseState, environment: purchase.isTest ? "Test" : "Production")
            }
        case .unauthorized, .configuration, .transient, .escalate:
            return refusal(verdict)!
        case .tokenExpired(let reason):
            return .init(
                .verdict(.reject(Reason(.tokenExpired, detail: "Google says the purchase token is no longer valid (\(reason))"))), detail: reason.description)
        case .tokenNotFound(let reason):
            return .init(
                .verdict(.limitedTransient(reason, then: Reason(.invalidToken, detail: "Google does not know the purchase token"))),
                detail: reason.description)
        }
    }

    /// The judgement of a Developer API answer that is neither the answer nor about the token:
    /// Google refusing the credentials or the request, asking to wait, or failing; `nil` for the
    /// other verdicts, which each method reads its own way.
    static func refusal<Answer>(_ verdict: PlayAnswerClassifier.Verdict) -> EndpointExchange.Judgement<Answer>? {
        switch verdict {
        case .unauthorized(let reason), .configuration(let reason):
            return .init(.verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description)
        case .escalate(let reason):
            return .init(.verdict(.escalate(Reason(.playRefused, detail: reason.description))), detail: reason.description)
        case .answer, .tokenExpired, .tokenNotFound:
            return nil
        }
    }

    /// A 200 answer's body, read by `read`: not declared JSON, or unparseable, it is a transient
    /// verdict and the endpoint's failure (every Play API answer with a body is judged so).
    static func readBody<Answer>(
        _ response: HTTPResponse, _ read: ([UInt8]) throws -> EndpointExchange.Judgement<Answer>
    ) -> EndpointExchange.Judgement<Answer> {
        guard HTTPAnswerClassifier.declaresJSON(response) else {
            return .init(.verdict(.transient(Reason(.wrongContentType))), observation: .failure(reason: Reason(.wrongContentType)), detail: ReasonCode.wrongContentType.rawValue)
        }
        do {
            return try read(response.body)
        } catch {
            let description = "\(error)"
            return .init(
                .verdict(.transient(Reason(.unparseableAnswer, detail: description))), observation: .failure(reason: Reason(.unparseableAnswer)),
                detail: "unparseable_answer: \(description)")
        }
    }

    /// What an acknowledge or consume request's answer says.
    enum ActionAnswer {
        case done
        case recheck(Reason)
    }

    static func judgeAction(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<ActionAnswer> {
        guard let response = result.response else {
            return .of(HTTPAnswerClassifier.classify(result, now: now)) { _ in .init(.verdict(.transient(Reason(.unexpected)))) }
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        switch PlayAnswerClassifier.classifyAction(status: response.status, body: response.body, retryAfter: retryAfter) {
        case .done:
            return .init(.answer(.done), detail: "done")
        case .recheck(let reason):
            return .init(.answer(.recheck(reason)), detail: reason.description)
        case .unauthorized(let reason), .configuration(let reason):
            return .init(.verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description)
        case .escalate(let reason):
            return .init(.verdict(.escalate(Reason(.playRefused, detail: reason.description))), detail: reason.description)
        }
    }
}
