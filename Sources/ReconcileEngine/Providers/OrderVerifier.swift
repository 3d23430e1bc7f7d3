import Foundation
import ReconcileCore

/// Verifies (or delivers) one claimed order: sends the requests its protocol needs and says
/// what the answers mean. Never throws and never touches the store: the scheduler applies the
/// outcome.
public protocol OrderVerifier: Sendable {
    /// Where the attempt's first request goes (the scheduler takes its token before the claim).
    var firstEndpoint: VerificationEndpoint { get }

    /// Endpoints an attempt may need before its first request (Google's token endpoint): while
    /// one's circuit is open, the scheduler leases nothing for this verifier.
    var gatingEndpoints: [VerificationEndpoint] { get }

    /// The work this verifier takes (``WorkKind``): the scheduler gives each kind to the
    /// verifier that says so, never by its type.
    var work: Set<WorkKind> { get }

    func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome
}

extension OrderVerifier {
    public var gatingEndpoints: [VerificationEndpoint] { [] }
    /// A verifier of orders without a purchase token, by default.
    public var work: Set<WorkKind> { [.verify] }
}

/// What a verifier asks of the scheduler between requests of one attempt.
public protocol EndpointGate: Sendable {
    /// Waits for a token of `endpoint` (a bounce to the sandbox takes one too); false when the
    /// endpoint's circuit is open and nothing may be sent there.
    func acquire(_ endpoint: VerificationEndpoint) async -> Bool

    /// Reports what an exchange said about its endpoint: feeds its circuit, and a 429 pauses
    /// its bucket.
    func report(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool) async

    /// The wall clock the attempt lives by (the scheduler's ``DaemonClock``): what an exchange
    /// is dated by, and what a `Retry-After` date, a token's expiry and a signed transaction's
    /// validity are read against. A test's gate gives the test's time.
    func now() -> Date
}

/// Where a verifier sends its requests and how.
public struct EndpointSettings: Sendable, Hashable {
    public var url: String
    public var timeout: Duration
    /// The section's `CAFile=` anchors, trusted for this endpoint only.
    public var trustAnchors: TrustAnchors?
    /// `[Daemon] Proxy=`; `nil`: requests go directly.
    public var proxy: String?
    /// `Authorization: Bearer …`, when set. Never logged.
    public var bearerToken: String?

    public init(url: String, timeout: Duration, trustAnchors: TrustAnchors? = nil, proxy: String? = nil, bearerToken: String? = nil) {
        self.url = url
        self.timeout = timeout
        self.trustAnchors = trustAnchors
        self.proxy = proxy
        self.bearerToken = bearerToken
    }

    /// A request to this endpoint (`url`: this one, or one under it): its time-out, trust
    /// anchors and proxy.
    func request(
        method: String = "POST", url: String? = nil, headers: [HTTPHeader], body: [UInt8] = [], maximumResponseSize: Int = 1 << 20
    ) -> HTTPRequest {
        HTTPRequest(
            method: method, url: url ?? self.url, headers: headers, body: body, timeout: timeout, maximumResponseSize: maximumResponseSize,
            trustAnchors: trustAnchors, proxy: proxy)
    }

    /// The headers every request to this endpoint carries.
    func headers(_ extra: [HTTPHeader]) -> [HTTPHeader] {
        var headers = [HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "application/json")]
        headers.append(HTTPHeader("User-Agent", "reconciled/\(ReconcileVersion.current)"))
        headers += extra
        if let bearerToken { headers.append(HTTPHeader("Authorization", "Bearer \(bearerToken)")) }
        return headers
    }

    /// A request about one order to the merchant's side (verification or delivery): keyed by
    /// `Idempotency-Key: <order_id>` and numbered by `Reconcile-Attempt` (DESIGN §5).
    func orderRequest(_ order: ClaimedOrder, body: [UInt8]) -> HTTPRequest {
        request(
            headers: headers([HTTPHeader("Idempotency-Key", order.orderID), HTTPHeader("Reconcile-Attempt", String(max(1, order.attempt)))]),
            body: body)
    }
}
