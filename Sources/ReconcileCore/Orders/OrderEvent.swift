/// Something that happens to an order: one column of the table in DESIGN §4.
public enum OrderEvent: Sendable, Hashable, CustomStringConvertible {
    /// A spool file brought new proof (receipt, transaction id or signed transaction).
    case proofArrived
    /// The order is due and the daemon starts an attempt (verification, or delivery for a
    /// verified order).
    case attemptStarted
    /// The attempt failed in a way worth retrying.
    case transientFailure
    /// The verifier granted the order. `finishesOrder` is true when no delivery step follows
    /// (the merchant protocol grants in the same step, or no delivery URL is configured).
    case verified(finishesOrder: Bool)
    /// A definitive answer that ends the daemon's work: a rejection, or (when `escalate` is true)
    /// an outcome that needs a person, such as a duplicate transaction or a delivery refusal.
    case definitiveReject(escalate: Bool)
    /// `MaxAttempts` or `MaxAge` reached (DESIGN §6).
    case limitsHit
    /// The delivery endpoint acknowledged the grant.
    case delivered
    /// An operator's action through `reconcilectl`.
    case operatorAction(OperatorAction)
    /// The store confirmed it took the money back (DESIGN §5a): a refund, a revocation, a
    /// chargeback.
    case revocationConfirmed
    /// The store reversed a refund it had made.
    case refundReversed

    public var description: String {
        switch self {
        case .proofArrived: "proof arrives"
        case .attemptStarted: "attempt"
        case .transientFailure: "transient failure"
        case .verified: "verified"
        case .definitiveReject(let escalate): escalate ? "escalation" : "definitive reject"
        case .limitsHit: "limits hit"
        case .delivered: "delivered"
        case .operatorAction(let action): action.rawValue
        case .revocationConfirmed: "revocation confirmed"
        case .refundReversed: "refund reversed"
        }
    }
}

/// What an operator can do to an order (DESIGN §10).
public enum OperatorAction: String, CaseIterable, Sendable, Hashable, Codable {
    /// Keep the order from being attempted.
    case hold
    /// Undo a hold: the order returns to the state it was held in.
    case release
    /// Give up on the order for good.
    case cancel
    /// Finish the order by hand.
    case resolve
    /// Make the order due now, granting at least one more attempt.
    case retry
}
