/// Which transaction a store notification is matched by (DESIGN §5a): its `transactionId`, else
/// its `originalTransactionId` — never the original when the transaction is named (a Family
/// Sharing member's revocation names their own transaction, whose original is the purchaser's).
public enum NotificationMatching {
    public static func transactionID(of notification: StoreNotification) -> String? {
        notification.transactionID ?? notification.originalTransactionID
    }
}
