/// One valid spool file, ready to be committed: the parsed order plus the bytes it came from.
public struct IngestCandidate: Sendable, Hashable {
    public var submission: OrderSubmission
    /// The file exactly as read; kept in the store (unknown keys included).
    public var raw: [UInt8]
    /// Hex SHA-256 of `raw`: an identical file is a no-op.
    public var contentHash: String
    /// The spool file's name, for the history.
    public var fileName: String
    /// Who made an order no spool file brought (DESIGN §5b): kept on the order it creates.
    public var origin: OrderOrigin?

    public init(submission: OrderSubmission, raw: [UInt8], contentHash: String, fileName: String, origin: OrderOrigin? = nil) {
        self.submission = submission
        self.raw = raw
        self.contentHash = contentHash
        self.fileName = fileName
        self.origin = origin
    }
}

/// What committing one ``IngestCandidate`` did (the rules of DESIGN §3).
public enum IngestOutcome: Sendable, Hashable {
    /// A new order, stored in this state (`pending`, or `waiting` without usable proof).
    case accepted(OrderState)
    /// The same content was stored before: nothing to do.
    case unchanged
    /// New proof replaced the stored proof; the order moved (or stayed, when held, verifying or
    /// verified).
    case proofReplaced(from: OrderState, to: OrderState)
    /// A later file changed nothing (no new proof, or the order is finished or cancelled); the
    /// fact is recorded in the order's history.
    case duplicateIgnored(state: OrderState, why: String)
    /// The file conflicts with the stored order and must be quarantined.
    case conflict(OrderFileProblem)

    /// Whether the spool file may be deleted: its content is committed (or already was).
    public var isCommitted: Bool {
        if case .conflict = self { return false }
        return true
    }
}
