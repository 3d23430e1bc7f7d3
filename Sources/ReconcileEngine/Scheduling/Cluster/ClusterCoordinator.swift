import Foundation
import ReconcileCore
import ReconcileFoundation

/// How the scheduler takes part in a cluster of daemons sharing one store (DESIGN §7), or, for
/// a daemon alone on its store, does not: ``SoloCoordinator`` answers for one daemon,
/// ``SharedStoreCoordinator`` for a node of the shared PostgreSQL store. The scheduler asks it
/// its questions instead of asking whether the store is shared.
///
/// Called on the scheduler's executor only, from its turns.
public protocol ClusterCoordinator: Sendable {
    /// This start's lease owner, or `nil`: the scheduler names its own.
    var leaseOwner: String? { get }

    /// The share of `MaxRate`, `Burst` and `MaxInFlight` this node takes (1 alone).
    var share: Double { get }

    /// The store's clock minus this host's, in seconds (0 alone): due times are read and
    /// written on the store's clock.
    var clockOffset: TimeInterval { get }

    /// Whether work this node is not configured for (a delivery or a revocation notice without
    /// its URL) is left to other nodes instead of being finished or skipped here.
    var leavesUnconfiguredWorkToOthers: Bool { get }

    /// Whether other nodes end attempts too: store notifications that waited for an attempt are
    /// then looked for after every commit, not only at start.
    var othersEndAttempts: Bool { get }

    /// Heart-beats, renews the leases this node holds and rescues expired ones, each when due.
    ///
    /// - Parameters:
    ///   - report: what this node says of itself with a heartbeat.
    ///   - held: the orders whose leases this node holds (attempts running, outcomes not yet
    ///     committed, work leased ahead).
    mutating func coordinate(
        mono: ContinuousClock.Instant, timing: ClusterTiming, report: () -> NodeReport, held: () -> Set<Int64>
    ) throws -> ClusterPass

    /// Whether the turn may claim now; when holding back, the time to look again is added to
    /// `wakeTimes`.
    mutating func allowsClaims(mono: ContinuousClock.Instant, timing: ClusterTiming, wakeTimes: inout [ContinuousClock.Instant]) -> Bool

    /// Whether work already leased may start now (a node cut off from its store fences itself).
    func allowsStarts(mono: ContinuousClock.Instant, timing: ClusterTiming) -> Bool

    /// This host's wall clock stepped by `step` seconds. Returns `true` when the due times are
    /// kept on the store's clock, so that nothing is moved (only the offset to it changes).
    mutating func hostClockStepped(by step: TimeInterval) -> Bool

    /// A clean stop: the other nodes take this one's share at their next heartbeat.
    func leave()

    /// This node as `reconcilectl status` shows it; `nil` alone.
    func status(maxInFlight: Int) -> SchedulerStatus.Cluster?
}

/// What one ``ClusterCoordinator/coordinate(mono:timing:report:held:)`` pass found.
public struct ClusterPass: Sendable {
    /// When to coordinate next; `nil`: no cluster to look after.
    public var nextWake: ContinuousClock.Instant?
    /// How many nodes were live before and are now, when a heartbeat saw the count change:
    /// the scheduler takes the new share of its limits.
    public var liveNodesChanged: (before: Int, now: Int)?
    /// The held leases renewed, when they were renewed: the others are this node's no longer.
    public var renewed: Set<Int64>?
    /// How many expired leases were rescued.
    public var rescued = 0

    public init(
        nextWake: ContinuousClock.Instant? = nil, liveNodesChanged: (before: Int, now: Int)? = nil, renewed: Set<Int64>? = nil,
        rescued: Int = 0
    ) {
        self.nextWake = nextWake
        self.liveNodesChanged = liveNodesChanged
        self.renewed = renewed
        self.rescued = rescued
    }
}
