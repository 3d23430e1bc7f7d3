import Foundation

/// Everything one rule decided for one order, for a store to write in its transaction: the
/// order's record after, the history rows, the attempts' requests and the transaction claims.
/// A store writes it exactly as it is and decides nothing.
public struct OrderPlan: Sendable, Hashable {
    /// The record after the rule (its `reference` is 0 for an order to insert).
    public var record: OrderRecord
    /// Whether `record` differs from what the store read (history rows alone change no record).
    public var changesRecord: Bool
    /// The spool file to keep as the order's raw copy, when it changes (ingest).
    public var raw: [UInt8]?
    /// The requests an attempt sent, in order; written before the transitions.
    public var attempts: [PlannedAttempt]
    /// History rows, in order.
    public var transitions: [PlannedTransition]
    /// Transaction claims to take for this order (a claim the order already holds is kept).
    public var claims: [PlannedClaim]
    /// Outbox actions to insert with the change (DESIGN §5a); one whose idempotency key is
    /// stored already is not inserted again.
    public var outbox: [OutboxAction]
    /// Stored outbox actions of the order to write back as the rule left them (an operator's
    /// retry sends an escalated one again).
    public var outboxUpdates: [OutboxAction] = []

    public init(
        record: OrderRecord, changesRecord: Bool = true, raw: [UInt8]? = nil, attempts: [PlannedAttempt] = [],
        transitions: [PlannedTransition] = [], claims: [PlannedClaim] = [], outbox: [OutboxAction] = []
    ) {
        self.record = record
        self.changesRecord = changesRecord
        self.raw = raw
        self.attempts = attempts
        self.transitions = transitions
        self.claims = claims
        self.outbox = outbox
    }

    /// The transactions the order takes with this plan — the claims, and the transaction a
    /// grant names as the order is verified or finished — about which store notifications that
    /// came before the order (recorded unmatched) are applied now (DESIGN §5a).
    public var takenTransactions: [String] {
        var taken = claims.map(\.transactionID)
        if changesRecord, record.state == .verified || record.state == .finished, let transactionID = record.grant?.transactionID {
            taken.append(transactionID)
        }
        return taken
    }

    /// A plan that only records history: the record stays as it was read.
    public static func historyOnly(_ record: OrderRecord, _ transitions: [PlannedTransition]) -> OrderPlan {
        OrderPlan(record: record, changesRecord: false, transitions: transitions)
    }
}

/// One row of an order's history, as a rule plans it.
public struct PlannedTransition: Sendable, Hashable {
    public var at: Date
    public var actor: TransitionActor
    /// `nil` for the transition that creates the order.
    public var from: OrderState?
    public var to: OrderState
    public var reason: Reason
    /// Whether the row points at the last request the plan's attempt sent (its answer shows in
    /// `reconcilectl show`).
    public var linksLastAttempt: Bool

    public init(at: Date, actor: TransitionActor, from: OrderState?, to: OrderState, reason: Reason, linksLastAttempt: Bool = false) {
        self.at = at
        self.actor = actor
        self.from = from
        self.to = to
        self.reason = reason
        self.linksLastAttempt = linksLastAttempt
    }
}

/// One request of an attempt, for the order's history.
public struct PlannedAttempt: Sendable, Hashable {
    /// The attempt's number (of its kind).
    public var number: Int
    public var kind: WorkKind
    public var record: AttemptRecord

    public init(number: Int, kind: WorkKind, record: AttemptRecord) {
        self.number = number
        self.kind = kind
        self.record = record
    }
}

/// A transaction id to claim for the order, under the store's unique index.
public struct PlannedClaim: Sendable, Hashable {
    public var transactionID: String
    public var at: Date
    public var actor: TransitionActor

    public init(transactionID: String, at: Date, actor: TransitionActor) {
        self.transactionID = transactionID
        self.at = at
        self.actor = actor
    }
}
