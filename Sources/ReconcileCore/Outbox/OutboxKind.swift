/// What an outbox action does (DESIGN §5a): the follow-ups that must reach a server after an
/// order's state changed. Stored and printed as the raw values.
public enum OutboxKind: String, CaseIterable, Sendable, Hashable {
    /// `purchases.products.acknowledge` for a finished Google Play order (`Acknowledge=yes`).
    case playAcknowledge = "play_acknowledge"
    /// `purchases.products.consume` for a finished Google Play order (`Consume=yes`); consuming
    /// acknowledges too.
    case playConsume = "play_consume"
    /// Telling the merchant's `[Revocation] URL=` about a refund or its reversal (§5a).
    case revocationNotice = "revocation_notice"
    /// Apple's Send Consumption Information (§5a).
    case consumptionAnswer = "consumption_answer"

    /// Whether Google refunds the purchase when the action has not succeeded by its deadline.
    public var hasRefundDeadline: Bool { self == .playAcknowledge || self == .playConsume }
}

/// Where an outbox action is (DESIGN §5a). Stored and printed as the raw values.
public enum OutboxState: String, CaseIterable, Sendable, Hashable {
    /// Waiting to be sent (due at `next_attempt_at`), or in flight (leased).
    case pending
    /// The server did it.
    case done
    /// Not needed: the server had done it already (Google said acknowledged or consumed).
    case skipped
    /// Failed `MaxAttempts` times, or refused: a person decides.
    case escalated
}
