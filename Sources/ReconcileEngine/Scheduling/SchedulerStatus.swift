import Foundation
import ReconcileCore

/// The scheduler's live state, for `reconcilectl status` and metrics.
public struct SchedulerStatus: Sendable, Hashable {
    /// One endpoint's circuit.
    public struct Endpoint: Sendable, Hashable {
        public var endpoint: VerificationEndpoint
        /// `closed`, `open` or `half-open`.
        public var circuit: String
        public var openUntil: Date?
        public var lastReason: String?
        public var openings: Int
        /// Until when nothing is sent there after a 429 (its token bucket is paused); `nil` when
        /// it is not paused.
        public var pausedUntil: Date?

        public init(
            endpoint: VerificationEndpoint, circuit: String, openUntil: Date? = nil, lastReason: String? = nil, openings: Int = 0,
            pausedUntil: Date? = nil
        ) {
            self.endpoint = endpoint
            self.circuit = circuit
            self.openUntil = openUntil
            self.lastReason = lastReason
            self.openings = openings
            self.pausedUntil = pausedUntil
        }
    }

    public var inFlight: Int
    public var endpoints: [Endpoint]
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
