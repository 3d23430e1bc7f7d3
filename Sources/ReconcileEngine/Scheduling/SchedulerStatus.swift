import Foundation
import ReconcileCore
import ReconcileFoundation

/// The scheduler's live state, for `reconcilectl status` and metrics.
public struct SchedulerStatus: Sendable, Hashable {
    /// One endpoint's circuit.
    public struct Endpoint: Sendable, Hashable {
        public var endpoint: VerificationEndpoint
        /// `closed`, `open` or `half-open`.
        public var circuit: String
        public var openUntil: Date?
        public var lastReason: Reason?
        public var openings: Int
        /// Until when nothing is sent there after a 429 (its token bucket is paused); `nil` when
        /// it is not paused.
        public var pausedUntil: Date?
        /// Endpoint-level failures in a row, 0 after a success.
        public var consecutiveFailures: Int
        /// The last endpoint-level failure, whether or not it opened the circuit.
        public var lastFailure: Reason?

        public init(
            endpoint: VerificationEndpoint, circuit: String, openUntil: Date? = nil, lastReason: Reason? = nil, openings: Int = 0,
            pausedUntil: Date? = nil, consecutiveFailures: Int = 0, lastFailure: Reason? = nil
        ) {
            self.lastFailure = lastFailure
            self.consecutiveFailures = consecutiveFailures
            self.endpoint = endpoint
            self.circuit = circuit
            self.openUntil = openUntil
            self.lastReason = lastReason
            self.openings = openings
            self.pausedUntil = pausedUntil
        }
    }

    /// This node in a shared store's cluster.
    public struct Cluster: Sendable, Hashable {
        public var node: String
        public var liveNodes: Int
        /// The share of `MaxRate`, `Burst` and `MaxInFlight` this node takes.
        public var share: Double
        /// `MaxInFlight`'s share.
        public var maxInFlight: Int
        /// Orders whose expired lease this node rescued, since start.
        public var rescued: Int
        public var lastHeartbeat: Date?
    }

    public var inFlight: Int
    public var endpoints: [Endpoint]
    /// Since when the store cannot be reached (its server or the network to it is down); `nil`
    /// while it answers.
    public var storeUnreachableSince: Date?
    /// The last store failure while scheduling, until a commit succeeds again.
    public var storeProblem: String?
    /// `nil` unless the store is shared.
    public var cluster: Cluster?
    public var counters: Scheduler.Counters
    /// Durations of the requests sent since start, per endpoint (every configured endpoint has one).
    public var requestDurations: [VerificationEndpoint: LatencyHistogram]

    public init(
        inFlight: Int, endpoints: [Endpoint], counters: Scheduler.Counters,
        requestDurations: [VerificationEndpoint: LatencyHistogram] = [:]
    ) {
        self.inFlight = inFlight
        self.endpoints = endpoints
        self.counters = counters
        self.requestDurations = requestDurations
    }
}
