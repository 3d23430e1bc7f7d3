import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// The scheduler's part in a cluster of daemons sharing a PostgreSQL store (DESIGN §7), through
/// its ``ClusterCoordinator`` (which answers for a daemon alone too). And, for every store, it
/// backs off while the store fails.
extension Scheduler {
    /// The store's trouble while it lasts.
    struct StoreTrouble {
        var since: Date
        var unreachable: Bool
        var message: String
        /// How long the next retry waits.
        var delay: Duration
        var failures: Int
    }

    /// The coordinator for `store` when none is given: a node of a shared store, or a daemon
    /// alone.
    static func defaultCoordinator(for store: any OrderStore, logger: Logger, clock: any DaemonClock) -> any ClusterCoordinator {
        guard let shared = store as? any SharedOrderStore else { return SoloCoordinator() }
        return SharedStoreCoordinator(store: shared, logger: logger, clock: clock)
    }

    /// The wall clock as the store keeps time: the database's for a shared store.
    func storeNow() -> Date {
        clock.now().addingTimeInterval(coordinator.clockOffset)
    }

    var timing: ClusterTiming { ClusterTiming(leaseTime: settings.leaseTime ?? .seconds(120)) }

    /// Heart-beats, renews and rescues when due; returns when next to.
    func coordinate(mono: ContinuousClock.Instant) throws -> ContinuousClock.Instant? {
        let circuits = { [admission] in
            Dictionary(admission.states(now: mono).map { ($0.endpoint.rawValue, $0.circuit.description) }, uniquingKeysWith: { first, _ in first })
        }
        let pass = try coordinator.coordinate(
            mono: mono, timing: timing,
            report: { NodeReport(inFlight: inFlight, circuits: circuits(), startedAt: startedAt, version: ReconcileVersion.current) },
            held: { held.union(ready.compactMap(\.orderReference)) })
        if let change = pass.liveNodesChanged { takeShare(liveNodes: change.now, before: change.before) }
        if let renewed = pass.renewed { dropUnsent(keeping: renewed) }
        if pass.rescued > 0 { changeObserver?() }
        return pass.nextWake
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

    /// Takes the share of `liveNodes` live nodes (the coordinator counted them).
    func takeShare(liveNodes: Int, before: Int) {
        admission.reconfigure(Self.limits(settings, share: coordinator.share), endpoints: senders.endpoints, now: clock.instant())
        logger.notice(
            "live nodes on the shared store: \(liveNodes) (were \(before)); this one takes MaxInFlight=\(maxInFlight(.main))\(settings.main.maxRate.map { ", MaxRate=\(String(format: "%.3g", $0 * coordinator.share))" } ?? "")",
            [.reason: ReasonCode.clusterShare.rawValue])
        changeObserver?()
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
