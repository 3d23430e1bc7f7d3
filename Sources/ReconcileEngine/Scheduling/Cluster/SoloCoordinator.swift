import Foundation
import ReconcileCore

/// The ``ClusterCoordinator`` of a daemon alone on its store (SQLite): no heartbeats, no
/// shares, no other node to leave work to; the host's clock is the store's.
public struct SoloCoordinator: ClusterCoordinator {
    public init() {}

    public var leaseOwner: String? { nil }
    public var share: Double { 1 }
    public var clockOffset: TimeInterval { 0 }
    public var leavesUnconfiguredWorkToOthers: Bool { false }
    public var othersEndAttempts: Bool { false }

    public mutating func coordinate(
        mono: ContinuousClock.Instant, timing: ClusterTiming, report: () -> NodeReport, held: () -> Set<Int64>
    ) throws -> ClusterPass {
        ClusterPass()
    }

    public mutating func allowsClaims(mono: ContinuousClock.Instant, timing: ClusterTiming, wakeTimes: inout [ContinuousClock.Instant]) -> Bool {
        true
    }

    public func allowsStarts(mono: ContinuousClock.Instant, timing: ClusterTiming) -> Bool { true }

    public mutating func hostClockStepped(by step: TimeInterval) -> Bool { false }

    public func leave() {}

    public func status(maxInFlight: Int) -> SchedulerStatus.Cluster? { nil }
}
