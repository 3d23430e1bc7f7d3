import ReconcileFoundation

/// The daemon's journal fields (DESIGN §8), beside the logging machinery's own.
extension LogField {
    public static let orderID = LogField("ORDER_ID")
    public static let orderState = LogField("ORDER_STATE")
    public static let productID = LogField("PRODUCT_ID")
    public static let transactionID = LogField("TRANSACTION_ID")
    public static let attempt = LogField("ATTEMPT")
    /// RFC 3339 time of the next attempt.
    public static let nextAttempt = LogField("NEXT_ATTEMPT")
    public static let verifierStatus = LogField("VERIFIER_STATUS")
    public static let endpoint = LogField("ENDPOINT")
    public static let reason = LogField("REASON")

    // MARK: - Further fields

    /// A spool file's name (inside `incoming/`).
    public static let spoolFile = LogField("SPOOL_FILE")
    public static let httpStatus = LogField("HTTP_STATUS")
    /// The operator or daemon that caused a transition.
    public static let actor = LogField("ACTOR")
    /// An outbox action's kind (`play_acknowledge`).
    public static let action = LogField("ACTION")
}
