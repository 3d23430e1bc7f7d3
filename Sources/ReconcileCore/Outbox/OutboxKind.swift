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
