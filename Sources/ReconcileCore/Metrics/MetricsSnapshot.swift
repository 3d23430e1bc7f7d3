import Foundation
import ReconcileFoundation

/// What `[Daemon] MetricsFile=` reports (DESIGN §8), gathered at one moment from the store, the
/// scheduler and the spool ingest: the daemon collects it, ``families`` names it, and
/// ``PrometheusExposition`` writes it.
///
/// Counters count since the daemon started (Prometheus sees a restart as a counter reset);
/// ``startedAt`` tells restarts apart.
public struct MetricsSnapshot: Sendable, Hashable {
    /// Where an endpoint's circuit breaker is (DESIGN §6).
    public enum CircuitState: String, CaseIterable, Sendable, Hashable {
        case closed
        case halfOpen = "half-open"
        case open
    }

    /// One endpoint's circuit, and its pause after a 429.
    public struct Circuit: Sendable, Hashable {
        public var endpoint: VerificationEndpoint
        public var state: CircuitState
        /// How many times it opened since start.
        public var openings: Int
        /// Until when nothing is sent there after a 429; `nil` when it is not paused.
        public var pausedUntil: Date?

        public init(endpoint: VerificationEndpoint, state: CircuitState, openings: Int, pausedUntil: Date? = nil) {
            self.endpoint = endpoint
            self.state = state
            self.openings = openings
            self.pausedUntil = pausedUntil
        }
    }

    /// What became of a spool file (DESIGN §3).
    public enum SpoolFileOutcome: String, CaseIterable, Sendable, Hashable {
        /// A new order was stored.
        case accepted
        /// It repeated a stored order exactly.
        case unchanged
        /// It brought new proof for a stored order.
        case proofReplaced = "proof_replaced"
        /// A later file for a stored order that changed nothing (no new proof, or the order is
        /// finished or cancelled); noted in the order's history.
        case duplicate
        /// Moved to `rejected/` with its reason.
        case rejected
    }

    /// The attempt outcome classes the scheduler counts, in the order rendered (others it may
    /// report follow, sorted): `verified`, `delivered`, `transient` (charged, retried),
    /// `uncharged` (a probe or a configuration error: retried, not charged), `reject`, `escalate`.
    public static let outcomeClasses = ["verified", "delivered", "transient", "uncharged", "reject", "escalate"]

    /// The states the daemon's own transitions are counted for: how its attempts and expiry end.
    public static let transitionTargets: [OrderState] = [.finished, .rejected, .escalated, .expired, .pending]

    /// The daemon's version.
    public var version: String
    public var startedAt: Date
    /// When the snapshot was taken (the oldest pending order's age is measured to it).
    public var takenAt: Date
    /// Orders by state; states with none may be absent (they are written as 0).
    public var ordersByState: [OrderState: Int]
    /// When the oldest order waiting for verification (`pending` or `verifying`) was taken in.
    public var oldestPendingReceivedAt: Date?
    /// Attempts in flight now.
    public var attemptsInFlight: Int
    /// Attempts started since start (circuit probes included).
    public var attemptsStarted: Int
    /// Attempt outcomes by class (see ``outcomeClasses``).
    public var outcomes: [String: Int]
    /// The daemon's own transitions since start, by target state (see ``transitionTargets``;
    /// `pending` means an attempt failed and will be retried).
    public var transitions: [OrderState: Int]
    /// The configured endpoints' circuits.
    public var circuits: [Circuit]
    /// Durations of the HTTP requests sent, per endpoint.
    public var requestDurations: [VerificationEndpoint: LatencyHistogram]
    /// Spool files handled since start, by outcome.
    public var spoolFiles: [SpoolFileOutcome: Int]
    /// The outbox's backlog.
    public var outbox: OutboxSummary = OutboxSummary()
    /// Store notifications no order holds the transaction of.
    public var unmatchedNotifications = 0
    /// Purchases the stores reported: waiting for the phone's order, left for a person (DESIGN §5b).
    public var discovered = DiscoverySummary()
    /// Purchases the stores reported since start, by source and what became of them.
    public var discoveredEvents: [DiscoveryCounters.Key: Int] = [:]

    public init(
        version: String, startedAt: Date, takenAt: Date, ordersByState: [OrderState: Int] = [:], oldestPendingReceivedAt: Date? = nil,
        attemptsInFlight: Int = 0, attemptsStarted: Int = 0, outcomes: [String: Int] = [:], transitions: [OrderState: Int] = [:],
        circuits: [Circuit] = [], requestDurations: [VerificationEndpoint: LatencyHistogram] = [:],
        spoolFiles: [SpoolFileOutcome: Int] = [:]
    ) {
        self.version = version
        self.startedAt = startedAt
        self.takenAt = takenAt
        self.ordersByState = ordersByState
        self.oldestPendingReceivedAt = oldestPendingReceivedAt
        self.attemptsInFlight = attemptsInFlight
        self.attemptsStarted = attemptsStarted
        self.outcomes = outcomes
        self.transitions = transitions
        self.circuits = circuits
        self.requestDurations = requestDurations
        self.spoolFiles = spoolFiles
    }
}
