import Foundation

/// A store notification as the store holds it: what it said, when the daemon took it in, the
/// order it matched and what became of it (`reconcilectl notifications`, `show`).
public struct StoredNotification: Sendable, Hashable {
    public var reference: Int64
    public var notification: StoreNotification
    public var receivedAt: Date
    /// ``NotificationRules/Outcome/code``: `applied`, `no_change`, `waiting`, `recorded`,
    /// `unmatched`.
    public var outcome: String
    public var appliedAt: Date?
    /// The order it is about, when one holds its transaction.
    public var orderID: String?

    public init(
        reference: Int64, notification: StoreNotification, receivedAt: Date, outcome: String, appliedAt: Date?, orderID: String?
    ) {
        self.reference = reference
        self.notification = notification
        self.receivedAt = receivedAt
        self.outcome = outcome
        self.appliedAt = appliedAt
        self.orderID = orderID
    }
}

/// What taking in one notification did.
public enum NotificationIngestOutcome: Sendable, Hashable {
    /// Taken in before (the same id, by file or by polling): nothing changed.
    case duplicate
    case taken(NotificationRules.Outcome)
    /// It told of a purchase the phone may never send (DESIGN §5b): what keeping it did.
    case discovered(DiscoveryArrival)
}

/// The store's side of store notifications (DESIGN §5a) besides taking them in
/// (``OrderIngesting/ingestNotifications(_:now:)``): applying those that waited for an attempt,
/// and listing them for the operator.
public protocol NotificationStore: Sendable {
    /// Applies the notifications that waited for an attempt in flight whose order is free now.
    func applyWaitingNotifications(now: Date) throws -> [NotificationRules.Outcome]

    /// The order's notifications, oldest first.
    func notifications(orderID: String) throws -> [StoredNotification]

    /// The newest first; only those no order holds the transaction of, with `unmatchedOnly`.
    func notifications(unmatchedOnly: Bool, limit: Int) throws -> [StoredNotification]
}
