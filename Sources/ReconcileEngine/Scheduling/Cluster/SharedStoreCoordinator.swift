import Foundation
import ReconcileCore
import ReconcileFoundation

/// The ``ClusterCoordinator`` of a node of the shared store (DESIGN §7): it heart-beats, reads
/// how many nodes are live (the scheduler takes its share of the limits), renews the leases of
/// its attempts, rescues expired ones, keeps the offset to the database's clock, and holds back
/// while it is not sure the others count it.
public struct SharedStoreCoordinator: ClusterCoordinator {
    let store: any SharedOrderStore
    let logger: Logger
    /// The host's wall clock, against which the database's offset is measured.
    let clock: any DaemonClock
    var liveNodes = 1
    /// The next heartbeat (and renewal, and rescue look-out); `nil`: now.
    var nextHeartbeat: ContinuousClock.Instant?
    /// When another node's lease ends: look for expired leases then.
    var nextRescue: ContinuousClock.Instant?
    /// When the last heartbeat succeeded; `nil` before the first.
    var lastHeartbeat: ContinuousClock.Instant?
    var lastHeartbeatAt: Date?
    /// Claims wait until then: after this node joined (or came back), until every other node
    /// has heart-beaten since and so counts it in their shares.
    var holdUntil: ContinuousClock.Instant?
    var rescued = 0
    public private(set) var clockOffset = 0.0

    public init(store: any SharedOrderStore, logger: Logger, clock: any DaemonClock) {
        self.store = store
        self.logger = logger
        self.clock = clock
    }

    public var leaseOwner: String? { store.leaseOwner }
    public var share: Double { ClusterTiming.share(liveNodes: liveNodes) }
    public var leavesUnconfiguredWorkToOthers: Bool { true }
    public var othersEndAttempts: Bool { true }

    public mutating func coordinate(
        mono: ContinuousClock.Instant, timing: ClusterTiming, report: () -> NodeReport, held: () -> Set<Int64>
    ) throws -> ClusterPass {
        var pass = ClusterPass()
        if nextHeartbeat.map({ mono >= $0 }) ?? true {
            let sent = clock.now()
            let view = try store.heartbeat(report(), liveWithin: timing.liveWindow)
            let received = clock.now()
            // The database's clock against ours, at the middle of the round trip.
            clockOffset = view.databaseNow.timeIntervalSince(sent.addingTimeInterval(received.timeIntervalSince(sent) / 2))
            lastHeartbeat = mono
            lastHeartbeatAt = received
            nextHeartbeat = mono + timing.heartbeatInterval
            if !view.wasLive && view.liveNodes > 1 {
                // The others count this node only from their next heartbeat on: until then
                // their shares leave no room for it.
                holdUntil = mono + timing.heartbeatInterval
                logger.notice(
                    "joined \(Plural.count(view.liveNodes - 1, "other live node")) on the shared store; taking a 1/\(view.liveNodes) share of the limits in \(TimeSpan.format(timing.heartbeatInterval))",
                    [.reason: ReasonCode.clusterJoin.rawValue])
            }
            if view.liveNodes != liveNodes {
                pass.liveNodesChanged = (liveNodes, view.liveNodes)
                liveNodes = view.liveNodes
            }
            nextRescue = view.nextForeignLeaseEnd.map { mono + .seconds(max(0, $0.timeIntervalSince(view.databaseNow))) + .milliseconds(50) }
            // Leases of attempts still running (and of outcomes not yet committed) last another
            // LeaseTime: renewed every interval, well before half of it has passed.
            let leases = held()
            if !leases.isEmpty {
                let renewed = try store.renewLeases(Array(leases), length: timing.leaseTime)
                if renewed.count < leases.count {
                    logger.debug("renewed \(renewed.count) of \(Plural.count(leases.count, "lease")); the others ended or were taken")
                }
                pass.renewed = renewed
            }
            pass.rescued = try rescue()
        } else if let rescueAt = nextRescue, mono >= rescueAt {
            nextRescue = nil
            pass.rescued = try rescue()
        }
        pass.nextWake = [nextHeartbeat, nextRescue].compactMap { $0 }.min()
        return pass
    }

    /// Gives back the orders whose leases expired (any node's, this one's earlier starts' too).
    mutating func rescue() throws -> Int {
        var count = 0
        while true {
            let rescued = try store.rescueExpiredLeases(limit: 500)
            for lease in rescued {
                logger.warning(
                    "rescued order \(lease.orderID): the lease of \(lease.owner) ended at \(RFC3339.formatWithMilliseconds(lease.leasedUntil)) during its attempt; the attempt counts and the order is due again",
                    [.orderID: lease.orderID, .reason: ReasonCode.leaseExpired.rawValue])
            }
            count += rescued.count
            self.rescued += rescued.count
            if rescued.count < 500 { return count }
        }
    }

    public mutating func allowsClaims(mono: ContinuousClock.Instant, timing: ClusterTiming, wakeTimes: inout [ContinuousClock.Instant]) -> Bool {
        if let hold = holdUntil {
            if mono < hold {
                wakeTimes.append(hold)
                return false
            }
            holdUntil = nil
        }
        return allowsStarts(mono: mono, timing: timing)
    }

    /// Only while this node's last heartbeat is recent enough that it still counts as live.
    public func allowsStarts(mono: ContinuousClock.Instant, timing: ClusterTiming) -> Bool {
        guard let last = lastHeartbeat else { return false }
        return mono - last < timing.liveWindow / 2
    }

    /// Due times are on the database's clock: this host's step moves nothing there (clamping
    /// would make every node's backed-off orders due at once). Only the offset to the
    /// database's clock changes; the next heartbeat measures it again.
    public mutating func hostClockStepped(by step: TimeInterval) -> Bool {
        clockOffset -= step
        nextHeartbeat = nil
        return true
    }

    public func leave() {
        do {
            try store.leave()
        } catch {
            logger.warning("cannot mark this node stopped in the store: \(error); the others count it out within LeaseTime")
        }
    }

    public func status(maxInFlight: Int) -> SchedulerStatus.Cluster? {
        SchedulerStatus.Cluster(
            node: store.node, liveNodes: liveNodes, share: share, maxInFlight: maxInFlight, rescued: rescued,
            lastHeartbeat: lastHeartbeatAt)
    }
}
