import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// The scheduler's part in a cluster of daemons sharing a PostgreSQL store (DESIGN §7): it
/// heart-beats, takes its share of the limits, renews its leases, rescues expired ones, and
/// keeps out of the way while it is not sure it counts as live. And, for every store, it backs
/// off while the store fails.
extension Scheduler {
    /// What the scheduler knows of the cluster.
    struct ClusterState {
        var startedAt = Date()
        var liveNodes = 1
        var share = 1.0
        /// The next heartbeat (and renewal, and rescue look-out); `nil`: now.
        var nextHeartbeat: ContinuousClock.Instant?
        /// When another node's lease ends: look for expired leases then.
        var nextRescue: ContinuousClock.Instant?
        /// When the last heartbeat succeeded; `nil` before the first.
        var lastHeartbeat: ContinuousClock.Instant?
        var lastHeartbeatAt: Date?
        /// Claims wait until then: after this node joined (or came back), until every other
        /// node has heart-beaten since and so counts it in their shares.
        var holdUntil: ContinuousClock.Instant?
        /// The database's clock minus this host's (seconds): due times are read and written on
        /// the database's clock.
        var clockOffset = 0.0
        var rescued = 0
    }

    /// The store's trouble while it lasts.
    struct StoreTrouble {
        var since: Date
        var unreachable: Bool
        var message: String
        /// How long the next retry waits.
        var delay: Duration
        var failures: Int
    }

    /// The wall clock as the store keeps time: the database's for a shared store.
    func storeNow() -> Date {
        clock.now().addingTimeInterval(cluster.clockOffset)
    }

    var timing: ClusterTiming { ClusterTiming(leaseTime: settings.leaseTime ?? .seconds(120)) }

    /// Heart-beats, renews and rescues when due; returns when next to.
    func coordinate(mono: ContinuousClock.Instant) throws -> ContinuousClock.Instant? {
        guard let shared else { return nil }
        let timing = timing
        if cluster.nextHeartbeat.map({ mono >= $0 }) ?? true {
            let circuits = Dictionary(
                admission.states(now: mono).map { ($0.endpoint.rawValue, $0.circuit.description) }, uniquingKeysWith: { first, _ in first })
            let sent = clock.now()
            let view = try shared.heartbeat(
                NodeReport(inFlight: inFlight, circuits: circuits, startedAt: cluster.startedAt, version: ReconcileVersion.current),
                liveWithin: timing.liveWindow)
            let received = clock.now()
            // The database's clock against ours, at the middle of the round trip.
            cluster.clockOffset = view.databaseNow.timeIntervalSince(sent.addingTimeInterval(received.timeIntervalSince(sent) / 2))
            cluster.lastHeartbeat = mono
            cluster.lastHeartbeatAt = received
            cluster.nextHeartbeat = mono + timing.heartbeatInterval
            if !view.wasLive && view.liveNodes > 1 {
                // The others count this node only from their next heartbeat on: until then
                // their shares leave no room for it.
                cluster.holdUntil = mono + timing.heartbeatInterval
                logger.notice(
                    "joined \(Plural.count(view.liveNodes - 1, "other live node")) on the shared store; taking a 1/\(view.liveNodes) share of the limits in \(TimeSpan.format(timing.heartbeatInterval))",
                    [.reason: ReasonCode.clusterJoin.rawValue])
            }
            setLiveNodes(view.liveNodes)
            cluster.nextRescue = view.nextForeignLeaseEnd.map { mono + .seconds(max(0, $0.timeIntervalSince(view.databaseNow))) + .milliseconds(50) }
            // Leases of attempts still running (and of outcomes not yet committed) last another
            // LeaseTime: renewed every interval, well before half of it has passed.
            let leases = held.union(ready.compactMap(\.orderReference))
            if !leases.isEmpty {
                let renewed = try shared.renewLeases(Array(leases), length: settings.leaseTime ?? .seconds(120))
                if renewed.count < leases.count {
                    logger.debug("renewed \(renewed.count) of \(Plural.count(leases.count, "lease")); the others ended or were taken")
                }
                dropUnsent(keeping: renewed)
            }
            try rescue()
        } else if let rescueAt = cluster.nextRescue, mono >= rescueAt {
            cluster.nextRescue = nil
            try rescue()
        }
        return [cluster.nextHeartbeat, cluster.nextRescue].compactMap { $0 }.min()
    }

    /// Forgets orders leased ahead whose leases were not renewed (this node was cut off past
    /// `LeaseTime`, or another rescued them): they are no longer this node's, and sending them
    /// now could send an order twice (DESIGN §7: a node that lost its lease writes nothing). Not
    /// given back either — whoever holds them now, or the rescue, decides.
    func dropUnsent(keeping renewed: Set<Int64>) {
        let lost = ready.filter { item in item.orderReference.map { !renewed.contains($0) } ?? false }
        guard !lost.isEmpty else { return }
        ready.removeAll { item in item.orderReference.map { !renewed.contains($0) } ?? false }
        for item in lost {
            logger.warning(
                "the lease on \(item.what) was lost before its attempt started; not sent (it is due again by rescue)",
                [.orderID: item.orderID, .reason: ReasonCode.leaseLost.rawValue])
        }
    }

    /// Gives back the orders whose leases expired (any node's, this one's earlier starts' too).
    func rescue() throws {
        guard let shared else { return }
        while true {
            let rescued = try shared.rescueExpiredLeases(limit: 500)
            for lease in rescued {
                logger.warning(
                    "rescued order \(lease.orderID): the lease of \(lease.owner) ended at \(RFC3339.formatWithMilliseconds(lease.leasedUntil)) during its attempt; the attempt counts and the order is due again",
                    [.orderID: lease.orderID, .reason: ReasonCode.leaseExpired.rawValue])
            }
            cluster.rescued += rescued.count
            if !rescued.isEmpty { changeObserver?() }
            if rescued.count < 500 { return }
        }
    }

    /// Takes the share of `liveNodes` live nodes.
    func setLiveNodes(_ liveNodes: Int) {
        guard liveNodes != cluster.liveNodes || cluster.share != ClusterTiming.share(liveNodes: liveNodes) else { return }
        let before = cluster.liveNodes
        cluster.liveNodes = liveNodes
        cluster.share = ClusterTiming.share(liveNodes: liveNodes)
        let mono = clock.instant()
        admission.reconfigure(Self.limits(settings, share: cluster.share), endpoints: Self.endpoints(of: settings), now: mono)
        logger.notice(
            "live nodes on the shared store: \(liveNodes) (were \(before)); this one takes MaxInFlight=\(maxInFlight(.main))\(settings.maxRate.map { ", MaxRate=\(String(format: "%.3g", $0 * cluster.share))" } ?? "")",
            [.reason: ReasonCode.clusterShare.rawValue])
        changeObserver?()
    }

    /// Whether the turn may claim: not while holding back after joining, nor while this node's
    /// own heartbeat is stale.
    func clusterAllowsWork(mono: ContinuousClock.Instant, wakeTimes: inout [ContinuousClock.Instant]) -> Bool {
        guard shared != nil else { return true }
        if let hold = cluster.holdUntil {
            if mono < hold {
                wakeTimes.append(hold)
                return false
            }
            cluster.holdUntil = nil
        }
        return clusterAllowsStarts(mono: mono)
    }

    /// Whether leased orders may start: only while this node's last heartbeat is recent enough
    /// that it still counts as live (a node cut off from the store fences itself).
    func clusterAllowsStarts(mono: ContinuousClock.Instant) -> Bool {
        guard shared != nil else { return true }
        guard let last = cluster.lastHeartbeat else { return false }
        return mono - last < timing.liveWindow / 2
    }

    /// A clean stop: the other nodes take this one's share at their next heartbeat.
    func leaveCluster() {
        guard let shared else { return }
        do {
            try shared.leave()
        } catch {
            logger.warning("cannot mark this node stopped in the store: \(error); the others count it out within LeaseTime")
        }
    }

    // MARK: - Store failures

    /// The longest wait between two tries of a failing store.
    static let maximumStoreRetry: Duration = .seconds(30)

    /// Records a store failure and returns how long to wait before the next try: 0.5 s, doubled
    /// at each failure in a row, at most 30 s.
    func storeFailed(_ error: any Error) -> Duration {
        let failure = StoreFailure.of(error)
        var trouble = storeTrouble ?? StoreTrouble(since: clock.now(), unreachable: false, message: "", delay: .milliseconds(250), failures: 0)
        trouble.delay = min(Self.maximumStoreRetry, trouble.delay * 2)
        trouble.failures += 1
        trouble.unreachable = failure == .unavailable
        trouble.message = String(describing: error)
        storeTrouble = trouble
        let what = failure == .unavailable ? "the store is unreachable" : "the store failed while scheduling"
        logger.error(
            "\(what): \(error); retrying in \(TimeSpan.format(trouble.delay)) (failure \(trouble.failures) in a row)",
            id: .storeUnavailable, [.reason: failure.rawValue])
        if trouble.failures == 1 { changeObserver?() }
        return trouble.delay
    }

    /// The store answered again after failing.
    func storeRecovered() {
        guard let trouble = storeTrouble else { return }
        storeTrouble = nil
        logger.notice(
            "the store answers again, after \(trouble.failures) failed \(trouble.failures == 1 ? "try" : "tries") since \(RFC3339.format(trouble.since))",
            [.reason: ReasonCode.storeRecovered.rawValue])
        changeObserver?()
    }
}
