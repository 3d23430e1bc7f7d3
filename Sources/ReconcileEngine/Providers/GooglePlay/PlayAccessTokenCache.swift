import Foundation
import ReconcileCore
import ReconcileCrypto

/// The access token for the Google Play Developer API (DESIGN §5 "Google Play"): got with a JWT
/// bearer grant signed with the service account's key, kept until five minutes before it
/// expires, refreshed by one request at a time however many attempts need it (the others wait
/// for that one), and dropped when Google refuses it (a 401) so that the next caller refreshes.
///
/// The key, the assertion and the access token never leave this type except in the
/// `Authorization` header of a request; nothing here logs.
public actor PlayAccessTokenCache {
    /// Why there is no token.
    public enum Failure: Error, Sendable, Hashable {
        /// The grant was refused (`invalid_grant` and the like): a configuration error of
        /// `googleplay-token`.
        case configuration(Reason)
        /// The token endpoint failed or could not be asked (its circuit is open): try later,
        /// without charging the order.
        case unavailable(Reason)
    }

    /// What a caller gets: the token, or why not, and the token request when this caller sent it.
    public struct Answer: Sendable {
        public var token: Result<String, Failure>
        /// The grant request, for the history of the attempt that sent it.
        public var record: AttemptRecord?
    }

    /// How often the cache answered from memory, and how often it had to ask Google.
    public struct Statistics: Sendable, Hashable {
        public var hits = 0
        public var refreshes = 0
        public var failures = 0
        /// Requests that found a grant in flight and took its answer.
        public var joined = 0

        /// Hits per request for a token.
        public var hitRate: Double { hits + refreshes + failures == 0 ? 0 : Double(hits) / Double(hits + refreshes + failures) }
    }

    private let account: GoogleServiceAccount
    private let endpoint: EndpointSettings
    private let transport: any HTTPTransport
    /// How long before its expiry a token is replaced.
    private let refreshMargin: TimeInterval
    /// What the token may be used for: the Developer API, and Cloud Pub/Sub when a subscription
    /// is pulled (`[GooglePlay] Subscription=`).
    private let scopes: [String]
    private var current: (token: String, expiresAt: Date)?
    private var refreshing: Task<Fetched, Never>?
    public private(set) var statistics = Statistics()

    /// - Parameter endpoint: the token endpoint (`TokenURL=`, else the key's `token_uri`).
    public init(
        account: GoogleServiceAccount, endpoint: EndpointSettings, transport: any HTTPTransport, refreshMargin: TimeInterval = 300,
        scopes: [String] = [GoogleJWT.scope]
    ) {
        self.account = account
        self.endpoint = endpoint
        self.transport = transport
        self.refreshMargin = refreshMargin
        self.scopes = scopes
    }

    /// A token valid for at least the refresh margin, refreshing it (once, for every caller
    /// waiting) when needed. The grant request takes a token of `googleplay-token` from `gate`;
    /// time is the gate's clock unless `now` is given.
    public func token(gate: any EndpointGate, now: Date? = nil) async -> Answer {
        if let current, current.expiresAt.timeIntervalSince(now ?? gate.now()) > refreshMargin {
            statistics.hits += 1
            return Answer(token: .success(current.token), record: nil)
        }
        if let refreshing {
            // Another attempt is asking already: its answer is ours, its request its own.
            statistics.joined += 1
            return Answer(token: await refreshing.value.token, record: nil)
        }
        let task = Task { [account, endpoint, transport, scopes] in
            await Self.grant(account: account, endpoint: endpoint, transport: transport, scopes: scopes, gate: gate)
        }
        refreshing = task
        let fetched = await task.value
        refreshing = nil
        switch fetched.token {
        case .success(let token):
            statistics.refreshes += 1
            current = (token, gate.now().addingTimeInterval(TimeInterval(fetched.expiresIn)))
        case .failure:
            statistics.failures += 1
        }
        return Answer(token: fetched.token, record: fetched.record)
    }

    /// Google refused `token` (a 401): forget it, unless a newer one replaced it already.
    public func invalidate(_ token: String) {
        if current?.token == token { current = nil }
    }

    /// One grant request, with what it said.
    private struct Fetched: Sendable {
        var token: Result<String, Failure>
        var expiresIn: Int
        var record: AttemptRecord?
    }

    private static func grant(
        account: GoogleServiceAccount, endpoint: EndpointSettings, transport: any HTTPTransport, scopes: [String], gate: any EndpointGate
    ) async -> Fetched {
        guard await gate.acquire(.googlePlayToken) else {
            return Fetched(token: .failure(.unavailable(Reason(.endpointCircuitOpen(.googlePlayToken)))), expiresIn: 0)
        }
        let assertion: String
        do {
            assertion = try GoogleJWT.assertion(for: account, scopes: scopes, now: gate.now())
        } catch {
            await gate.report(.googlePlayToken, .configuration(reason: Reason(.playKey)), retryAfter: nil, rateLimited: false)
            return Fetched(token: .failure(.configuration(Reason(.playKey, detail: "cannot sign the grant (\(error))"))), expiresIn: 0)
        }
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let request = HTTPRequest(
            method: "POST", url: endpoint.url,
            headers: [
                HTTPHeader("Content-Type", "application/x-www-form-urlencoded"), HTTPHeader("Accept", "application/json"),
                HTTPHeader("User-Agent", "reconciled/\(ReconcileVersion.current)"),
            ],
            body: Array(body.utf8), timeout: endpoint.timeout, maximumResponseSize: 64 << 10, trustAnchors: endpoint.trustAnchors,
            proxy: endpoint.proxy)
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(request, to: .googlePlayToken, judge: judge)
        switch meaning {
        case .answer(let answer):
            return Fetched(token: .success(answer.accessToken), expiresIn: answer.expiresIn, record: record)
        case .verdict(.configuration(let reason)):
            return Fetched(token: .failure(.configuration(reason)), expiresIn: 0, record: record)
        case .verdict(.transient(let reason, _)):
            return Fetched(token: .failure(.unavailable(reason)), expiresIn: 0, record: record)
        case .verdict:
            return Fetched(token: .failure(.unavailable(Reason(.tokenUnexpectedAnswer))), expiresIn: 0, record: record)
        }
    }

    /// What a token endpoint answer means for the grant and the endpoint; the detail never holds
    /// the token.
    static func judge(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<PlayTokenAnswer> {
        guard let response = result.response else {
            return .of(HTTPAnswerClassifier.classify(result, now: now)) { _ in .init(.verdict(.transient(Reason(.unexpected)))) }
        }
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        switch PlayTokenAnswer.classify(status: response.status, body: response.body, retryAfter: retryAfter) {
        case .token(let answer):
            return .init(.answer(answer), detail: "access token for \(answer.expiresIn) s")
        case .configuration(let reason):
            return .init(.verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description)
        }
    }
}
