import ReconcileFoundation

/// The journal line for a store notification taken in (DESIGN §5a, §8), the same whichever way
/// it came — a spool file, a poll — or when it was applied after the attempt it waited for:
/// `notice` with `order-revoked` / `order-reinstated` when an order moved, `notification-unmatched`
/// when no order holds its transaction, `info` otherwise. Never the signed payload.
public enum NotificationJournal {
    /// - Parameters:
    ///   - via: how it came, for the message (`"from spool file X"`, `"polled"`).
    ///   - spoolFile: the file's escaped name, as the `SPOOL_FILE` field.
    public static func report(
        _ outcome: NotificationIngestOutcome, of notification: StoreNotification, via: String, spoolFile: String? = nil, logger: Logger
    ) {
        let what = "\(notification.source == .appStore ? "App Store" : "Google Play") \(notification.type)"
        let transactionID = NotificationMatching.transactionID(of: notification)
        let transaction = transactionID.map { " for transaction \($0)" } ?? ""
        switch outcome {
        case .duplicate:
            logger.debug(
                "\(what) notification \(notification.notificationID) (\(via)) was taken in before; nothing to do",
                [.reason: notification.type, .spoolFile: spoolFile])
        case .taken(.applied(let orderID, let from, let to)):
            let fields: KeyValuePairs<LogField, String?> = [
                .orderID: orderID, .orderState: to.rawValue, .transactionID: transactionID, .reason: notification.type, .spoolFile: spoolFile,
            ]
            let message = "\(what)\(transaction): order \(orderID) \(from) → \(to) (\(via))"
            switch (from, to) {
            case (_, .revoked): logger.notice(message, id: .orderRevoked, fields)
            case (.revoked, _): logger.notice(message, id: .orderReinstated, fields)
            default: logger.notice(message, fields)
            }
        case .taken(.noChange(let orderID, let state)):
            logger.info(
                "\(what)\(transaction): order \(orderID) stays \(state) (\(via))",
                [.orderID: orderID, .orderState: state.rawValue, .transactionID: transactionID, .reason: notification.type, .spoolFile: spoolFile])
        case .taken(.waitsForAttempt(let orderID)):
            logger.info(
                "\(what)\(transaction): order \(orderID) has an attempt in flight; applied when it ends (\(via))",
                [.orderID: orderID, .transactionID: transactionID, .reason: notification.type, .spoolFile: spoolFile])
        case .taken(.recorded):
            logger.info(
                "\(what) notification \(notification.notificationID) (\(via)) recorded; it changes no order",
                [.transactionID: transactionID, .reason: notification.type, .spoolFile: spoolFile])
        case .discovered(let arrival):
            guard let purchase = notification.discovered else { return }
            DiscoveryJournal.report(arrival, of: purchase, via: "\(what) notification, \(via)", spoolFile: spoolFile, logger: logger)
        case .taken(.unmatched):
            logger.notice(
                "\(what)\(transaction) (\(via)) matches no order; recorded (reconcilectl notifications --unmatched)", id: .notificationUnmatched,
                [.transactionID: transactionID, .reason: notification.type, .spoolFile: spoolFile])
        }
    }
}
