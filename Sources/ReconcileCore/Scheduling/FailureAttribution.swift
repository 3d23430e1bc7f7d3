/// Tells, for one endpoint, a failure that follows particular orders from one of the endpoint
/// (issue 23, items 1 and 16): an order that failed there before, and whose endpoint has answered
/// other orders healthily since its first failure (of those since it last passed), fails for its
/// own reasons (a proof the server cannot take, an
/// order the server refuses); its failure is charged to it and says nothing about the endpoint.
///
/// Remembers when each order last failed at the endpoint (at most ``capacity`` orders; the
/// oldest are forgotten first, which only makes the rule more cautious). Pure: the caller passes
/// the time (a monotonic instant).
public struct FailureAttribution: Sendable, Hashable {
    /// Whom a failure is counted against.
    public enum Blame: Sendable, Hashable {
        /// The endpoint: it feeds the circuit.
        case endpoint
        /// The order: it is charged, the circuit is left alone.
        case order
    }

    /// The most orders remembered.
    public static let capacity = 65_536

    /// When the endpoint last answered healthily.
    public private(set) var lastHealthy: ContinuousClock.Instant?
    /// Per order failing here: its first failure since it last passed, and its last.
    private var failedAt: [Int64: Failures] = [:]

    private struct Failures: Sendable, Hashable {
        var first: ContinuousClock.Instant
        var last: ContinuousClock.Instant
    }

    public init() {}

    /// A failure of a request for `order` (`nil`: a request for no order, always the endpoint's).
    public mutating func failure(order: Int64?, now: ContinuousClock.Instant) -> Blame {
        guard let order else { return .endpoint }
        let previous = failedAt[order]
        if previous == nil && failedAt.count >= Self.capacity { forgetOldest() }
        failedAt[order] = Failures(first: previous?.first ?? now, last: now)
        if let previous, let lastHealthy, lastHealthy > previous.first { return .order }
        return .endpoint
    }

    /// The endpoint answered a request (for `order`) healthily.
    public mutating func healthy(order: Int64?, now: ContinuousClock.Instant) {
        lastHealthy = max(lastHealthy ?? now, now)
        if let order { failedAt[order] = nil }
    }

    /// When `order` last failed at the endpoint (`nil`: not that we know).
    public func lastFailure(_ order: Int64) -> ContinuousClock.Instant? { failedAt[order]?.last }

    /// Whether the endpoint answered healthily within `window` before `now`.
    public func answeredHealthily(within window: Duration, now: ContinuousClock.Instant) -> Bool {
        lastHealthy.map { now - $0 <= window } ?? false
    }

    /// Which of `orders` (due order, earliest first) a circuit's probe should be: the first that
    /// has not failed here, else the one that failed least recently.
    public func probeChoice(_ orders: [Int64]) -> Int? {
        guard !orders.isEmpty else { return nil }
        if let fresh = orders.firstIndex(where: { failedAt[$0] == nil }) { return fresh }
        return orders.indices.min { failedAt[orders[$0]]!.last < failedAt[orders[$1]]!.last }
    }

    private mutating func forgetOldest() {
        let cut = failedAt.values.map(\.last).sorted()[failedAt.count / 2]
        failedAt = failedAt.filter { $0.value.last > cut }
    }
}
