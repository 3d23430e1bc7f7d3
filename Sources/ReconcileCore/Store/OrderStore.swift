import Foundation

/// What the spool ingest needs of a store: committing batches of spool files.
public protocol OrderIngesting: Sendable {
    /// Commits a batch of spool files in one transaction, applying the rules of DESIGN §3 in
    /// order (a later candidate sees an earlier one of the same batch).
    ///
    /// - Parameters:
    ///   - verifiers: decide whether an order's proof is usable (`pending`) or not (`waiting`).
    /// - Returns: one outcome per candidate, in order.
    /// - Throws: when nothing could be committed (disk full, read-only, busy); then no spool
    ///   file may be deleted.
    func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome]

    /// Takes in verified store notifications in one transaction, in order (DESIGN §5a): each
    /// once by its id, applied to the order holding its transaction — at once, or, while that
    /// order's attempt is in flight, once it has ended.
    /// - Parameter consumption: how a `CONSUMPTION_REQUEST` is answered (an outbox action written
    ///   with it; ``ConsumptionRules``).
    /// - Parameter discovery: what a purchase a notification reports on its own (its
    ///   ``StoreNotification/discovered``) does: kept in the same transaction (DESIGN §5b), also
    ///   when the notification was taken in before without it (a Pub/Sub push file, unconfirmed).
    /// - Throws: when nothing could be committed; then no spool file may be deleted.
    func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome]

    /// Which of `ids` (notification ids of `source`) were taken in already: a redelivered
    /// Pub/Sub message among them is acknowledged without asking Google again.
    func takenInNotifications(_ ids: [String], source: StoreNotification.Source) throws -> Set<String>
}

extension OrderIngesting {
    /// None: a store that cannot tell has every message looked at again (the ingest still keeps
    /// each once).
    public func takenInNotifications(_ ids: [String], source: StoreNotification.Source) throws -> Set<String> { [] }

    /// ``ingestNotifications(_:consumption:discovery:now:)`` with `ConsumptionAnswer=off` and
    /// `[Discovery]`'s defaults.
    public func ingestNotifications(_ notifications: [StoreNotification], now: Date) throws -> [NotificationIngestOutcome] {
        try ingestNotifications(notifications, consumption: .off, discovery: DiscoverySettings(), now: now)
    }

    /// ``ingestNotifications(_:consumption:discovery:now:)`` with `[Discovery]`'s defaults.
    public func ingestNotifications(_ notifications: [StoreNotification], consumption: ConsumptionPolicy, now: Date) throws -> [NotificationIngestOutcome] {
        try ingestNotifications(notifications, consumption: consumption, discovery: DiscoverySettings(), now: now)
    }

    /// ``ingest(_:verifiers:now:)`` with `[Verifier] Kind=kind` only.
    public func ingest(_ candidates: [IngestCandidate], verifierKind: VerifierKind, now: Date) throws -> [IngestOutcome] {
        try ingest(candidates, verifiers: ConfiguredVerifiers(kind: verifierKind), now: now)
    }
}

/// The durable home of orders (DESIGN §7), as the daemon and `reconcilectl` see it.
///
/// One relational store serves it over both engines (`RelationalOrderStore` in ReconcileStore):
/// SQLite, one daemon per store, and PostgreSQL, shared by several with `FOR UPDATE SKIP LOCKED`
/// leases. Every method is one transaction: it commits entirely or not at all.
public protocol OrderStore: OrderIngesting, OutboxStore, NotificationStore, DiscoveryStore, SerializedStore {
    /// The order with this id, if stored.
    func order(id orderID: String) throws -> StoredOrder?

    /// The order's history, oldest first.
    func history(orderID: String) throws -> [TransitionRecord]

    /// The phone's orders that came late for the purchase order `orderID` was made of and
    /// finished `same_purchase_as` it (DESIGN §5b), oldest first.
    func samePurchaseOrders(as orderID: String) throws -> [String]

    /// How many orders are in each state (states with none are absent).
    func countsByState() throws -> [OrderState: Int]

    /// Drops receipts and raw files of `finished` and `cancelled` orders last changed before
    /// `cutoff`; rows, history, claims and Google Play purchase tokens (what the purchase is read
    /// by, for its outbox actions and refunds) stay (`KeepFinished=`).
    ///
    /// - Returns: how many orders were pruned.
    func pruneFinished(before cutoff: Date, now: Date) throws -> Int

    /// Applies an operator's action (DESIGN §4): to orders whose attempt is in flight it is
    /// recorded and applied when the attempt ends; a forbidden action is refused with the
    /// order's state named. `verifiers` decide whether a retried order has proof a verifier can
    /// use (`nil`: any proof counts). One transaction.
    func apply(_ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: Date) throws -> [OperatorOutcome]

    // MARK: - Scheduling

    /// Releases every lease (at start-up: one daemon per store, so any lease is a crash's).
    /// Orders left `verifying` go back to `pending`, due now; outbox actions in flight are due
    /// again now.
    ///
    /// - Returns: the ids of the orders released.
    func releaseLeases(now: Date) throws -> [String]

    /// Leases up to `limit` orders of `kind` due at `now`, earliest first, and (when `charge`)
    /// counts the attempt: `pending` orders become `verifying`.
    func claimDue(_ kind: WorkKind, now: Date, limit: Int, owner: String, leaseUntil: Date, charge: Bool) throws -> [ClaimedOrder]

    /// The earliest next attempt of an order of `kind`, or `nil` when none waits.
    func nextDueTime(_ kind: WorkKind) throws -> Date?

    /// Applies attempt completions under their leases, in one transaction.
    func complete(_ completions: [AttemptCompletion], owner: String, now: Date) throws -> [CompletionResult]

    /// One scheduler turn in one transaction (one fsync): applies `completions`, then leases
    /// what `claims` ask for.
    func commit(_ completions: [AttemptCompletion], claims: [ClaimRequest], owner: String, now: Date) throws -> TurnResult

    /// `waiting` orders taken in before `cutoff` expire (MaxAge without usable proof).
    func expireWaiting(receivedBefore cutoff: Date, now: Date, limit: Int) throws -> [CompletionResult]

    /// When the oldest `waiting` order was taken in, or `nil` when none waits.
    func oldestWaitingReceivedAt() throws -> Date?

    /// Brings every next attempt of `kinds` later than `limit` forward to `limit` (after the
    /// wall clock stepped back, so that the queue does not stall for the length of the step; and
    /// for deliveries when no delivery URL is configured any more).
    ///
    /// - Returns: how many orders moved.
    func clampNextAttempts(of kinds: [WorkKind], notAfter limit: Date) throws -> Int

    /// Makes the orders of `kinds` whose next attempt falls between `from` and `to` due at
    /// `now`: those an open circuit parked until its cool-down's end, when an operator closes it.
    ///
    /// - Returns: how many orders moved.
    func makeDue(of kinds: [WorkKind], dueFrom from: Date, to: Date, now: Date) throws -> Int

    /// Makes `waiting` orders whose proof one of the verifiers can use `pending` (after a reload
    /// changed `Kind=` or added a section). Returns how many.
    func promoteWaiting(usableBy verifiers: ConfiguredVerifiers, now: Date) throws -> Int
}

extension OrderStore {
    /// ``apply(_:verifiers:now:)`` with `[Verifier] Kind=kind` only.
    public func apply(_ request: OperatorRequest, verifierKind: VerifierKind?, now: Date) throws -> [OperatorOutcome] {
        try apply(request, verifiers: verifierKind.map { ConfiguredVerifiers(kind: $0) }, now: now)
    }

    /// ``promoteWaiting(usableBy:now:)`` with `[Verifier] Kind=kind` only.
    public func promoteWaiting(usableBy kind: VerifierKind, now: Date) throws -> Int {
        try promoteWaiting(usableBy: ConfiguredVerifiers(kind: kind), now: now)
    }

    /// Brings every next attempt, of every kind, later than `limit` forward to `limit`.
    public func clampNextAttempts(notAfter limit: Date) throws -> Int {
        try clampNextAttempts(of: WorkKind.allCases, notAfter: limit)
    }
}
