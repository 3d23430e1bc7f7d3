import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// A shared store that times its turns: the scheduler's `commit` calls that carry claims (one
/// transaction: the completions in hand, then the claim), everything else passed through. What
/// the cluster scenario reports as claim latency.
final class TimedStore: SharedOrderStore {
    let base: any SharedOrderStore
    private let claimTimes = Mutex<[Double]>([])

    init(_ base: any SharedOrderStore) {
        self.base = base
    }

    /// Seconds each turn with claims took, in the order they ran.
    var claimDurations: [Double] { claimTimes.withLock { $0 } }

    func commit(_ completions: [AttemptCompletion], claims: [ClaimRequest], owner: String, now: Date) throws -> TurnResult {
        guard !claims.isEmpty else { return try base.commit(completions, claims: claims, owner: owner, now: now) }
        let start = ContinuousClock.now
        let result = try base.commit(completions, claims: claims, owner: owner, now: now)
        let elapsed = (ContinuousClock.now - start).inSeconds
        claimTimes.withLock { $0.append(elapsed) }
        return result
    }

    // MARK: - Passed through

    func recordDiscovered(_ purchases: [DiscoveredPurchase], settings: DiscoverySettings, now: Date) throws -> [DiscoveryArrival] {
        try base.recordDiscovered(purchases, settings: settings, now: now)
    }

    func settleDiscovered(
        settings: DiscoverySettings, verifiers: ConfiguredVerifiers, now: Date, limit: Int, digest: @Sendable ([UInt8]) -> String
    ) throws -> [DiscoverySettlement] {
        try base.settleDiscovered(settings: settings, verifiers: verifiers, now: now, limit: limit, digest: digest)
    }

    func nextGraceEnd() throws -> Date? { try base.nextGraceEnd() }
    func discoveredPurchases(limit: Int) throws -> [StoredDiscoveredPurchase] { try base.discoveredPurchases(limit: limit) }
    func holdings(of purchases: [LookedUpPurchase]) throws -> [LookedUpPurchase] { try base.holdings(of: purchases) }
    func recover(
        _ purchases: [LookedUpPurchase], user: String?, allowTestPurchases: Bool, verifiers: ConfiguredVerifiers, now: Date,
        digest: @Sendable ([UInt8]) -> String
    ) throws -> [RecoveredPurchase] {
        try base.recover(purchases, user: user, allowTestPurchases: allowTestPurchases, verifiers: verifiers, now: now, digest: digest)
    }

    var executor: UnownedSerialExecutor { base.executor }
    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await base.writing(body) }
    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await base.reading(body) }
    var node: String { base.node }
    var leaseOwner: String { base.leaseOwner }
    func heartbeat(_ report: NodeReport, liveWithin: Duration) throws -> ClusterView { try base.heartbeat(report, liveWithin: liveWithin) }
    func rescueExpiredLeases(limit: Int) throws -> [RescuedLease] { try base.rescueExpiredLeases(limit: limit) }
    func renewLeases(_ references: [Int64], length: Duration) throws -> Set<Int64> { try base.renewLeases(references, length: length) }
    func nodes(liveWithin: Duration) throws -> [NodeStatus] { try base.nodes(liveWithin: liveWithin) }
    func leave() throws { try base.leave() }
    func notifyNodes() throws { try base.notifyNodes() }
    func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        try base.ingest(candidates, verifiers: verifiers, now: now)
    }
    func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome] {
        try base.ingestNotifications(notifications, consumption: consumption, discovery: discovery, now: now)
    }
    func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome] { try base.applyWaitingNotifications(now: now) }
    func takenInNotifications(_ ids: [String], source: StoreNotification.Source) throws -> Set<String> {
        try base.takenInNotifications(ids, source: source)
    }
    func notifications(orderID: String) throws -> [StoredNotification] { try base.notifications(orderID: orderID) }
    func notifications(unmatchedOnly: Bool, limit: Int) throws -> [StoredNotification] {
        try base.notifications(unmatchedOnly: unmatchedOnly, limit: limit)
    }
    func order(id orderID: String) throws -> StoredOrder? { try base.order(id: orderID) }
    func samePurchaseOrders(as orderID: String) throws -> [String] { try base.samePurchaseOrders(as: orderID) }
    func history(orderID: String) throws -> [TransitionRecord] { try base.history(orderID: orderID) }
    func countsByState() throws -> [OrderState: Int] { try base.countsByState() }
    func pruneFinished(before cutoff: Date, now: Date) throws -> Int { try base.pruneFinished(before: cutoff, now: now) }
    func apply(_ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date) throws -> [OperatorOutcome] {
        try base.apply(request, verifiers: verifiers, now: now)
    }
    func releaseLeases(now: Date) throws -> [String] { try base.releaseLeases(now: now) }
    func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder] {
        try base.claimDue(kind, now: now, limit: limit, owner: owner, leaseUntil: leaseUntil, charge: charge)
    }
    func nextDueTime(_ kind: WorkKind) throws -> Date? { try base.nextDueTime(kind) }
    func complete(_ completions: [AttemptCompletion], owner: String, now: Date) throws -> [CompletionResult] {
        try base.complete(completions, owner: owner, now: now)
    }
    func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult] {
        try base.expireWaiting(receivedBefore: cutoff, now: now, limit: limit)
    }
    func oldestWaitingReceivedAt() throws -> Date? { try base.oldestWaitingReceivedAt() }
    func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int { try base.clampNextAttempts(of: kinds, notAfter: limit) }
    func makeDue(of kinds: [WorkKind], dueFrom from: Date, to: Date, now: Date) throws -> Int {
        try base.makeDue(of: kinds, dueFrom: from, to: to, now: now)
    }
    func promoteWaiting(usableBy verifiers: ConfiguredVerifiers, now: Date) throws -> Int {
        try base.promoteWaiting(usableBy: verifiers, now: now)
    }
    func claimActions(endpoint: VerificationEndpoint, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws
        -> [ClaimedAction]
    {
        try base.claimActions(endpoint: endpoint, now: now, limit: limit, owner: owner, leaseUntil: leaseUntil, charge: charge)
    }
    func nextActionDueTime(endpoint: VerificationEndpoint) throws -> Date? { try base.nextActionDueTime(endpoint: endpoint) }
    func completeActions(_ completions: [OutboxCompletion], owner: String, now: Date) throws -> [OutboxResult] {
        try base.completeActions(completions, owner: owner, now: now)
    }
    func actions(orderID: String) throws -> [OutboxAction] { try base.actions(orderID: orderID) }
    func pendingActions(dueBy: Date?, limit: Int) throws -> [OutboxAction] { try base.pendingActions(dueBy: dueBy, limit: limit) }
    func outboxSummary() throws -> OutboxSummary { try base.outboxSummary() }
}
