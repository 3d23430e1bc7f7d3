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
