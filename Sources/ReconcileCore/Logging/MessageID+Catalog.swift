import ReconcileFoundation

/// The daemon's journal events (DESIGN §8): one `MESSAGE_ID` per kind, each catalogued in
/// `systemd/reconciled.catalog` with what happened and what to do (a test keeps them in step).
extension MessageID {
    public static let started = MessageID("started", "c0d2dbeba957416daeb248260df09379")
    public static let stopping = MessageID("stopping", "f612a2ce778b4b778657784e3797b70f")
    public static let reloaded = MessageID("reloaded", "d5b038f216ab42fb86470f8881c7df75")
    public static let configurationError = MessageID("configuration-error", "dc0b295bdd924c99b423fae3757054bd")
    public static let fileRejected = MessageID("file-rejected", "b6d50119cdba4c1b9d13142f2cb2f18d")
    public static let ordersAccepted = MessageID("orders-accepted", "2ac4805e9b3e45c68560ee449d7d801d")
    public static let finished = MessageID("finished", "3bd433d155944252940b836bc52c07ec")
    public static let rejected = MessageID("rejected", "9698da92b008404d88a8f8b7d65bd377")
    public static let escalated = MessageID("escalated", "8d96f3cc23f944988959a52d96d05ed5")
    public static let expired = MessageID("expired", "1ca5ecfac1e343c2ab3d45b7336df70e")
    public static let circuitOpened = MessageID("circuit-opened", "e44ae0d812854399b539920711940ab3")
    public static let circuitClosed = MessageID("circuit-closed", "ee7f5ad183a444df9cfbf25d16aea1c4")
    /// The daemon could not start (the reason is in the message and `STATUS=`).
    public static let startFailed = MessageID("start-failed", "90fb3158706844859a222e69189b6220")
    /// The store could not be written (disk full, read-only): ingest waits.
    public static let storeUnavailable = MessageID("store-unavailable", "263c5e913600495eb6ac0b8458ed0998")
    /// A spool subdirectory is a symlink, not a directory, or someone else's: not used.
    public static let spoolDirectoryRefused = MessageID("spool-directory-refused", "fb61eea515c04fbb9e3fe6b7f6ab9460")
    /// A duplicate spool file changed nothing.
    public static let duplicateIgnored = MessageID("duplicate-ignored", "da9277507a094f3c9077de417e2d72e8")

    /// The store's file was replaced or written by another process while the daemon ran: it stops.
    public static let storeLost = MessageID("store-lost", "b74805bf8a54456daff6a818bbeeed6b")
    /// An operator's action on many orders (`retry --state`): one summary line.
    public static let operatorBulkAction = MessageID("operator-bulk-action", "6b43fc98cd7f4ffdbbe4eb6851b4da8b")

    /// An outbox action (a Google Play acknowledgement) failed `MaxAttempts` times or was refused.
    public static let actionEscalated = MessageID("action-escalated", "df4c3164a8764d4fb89a55f7831e3df7")
    /// A Google Play acknowledgement or consumption still fails 48 hours after the purchase.
    public static let actionOverdue = MessageID("action-overdue", "6ed3934759bd4c628e591a5f509e56d2")

    /// The store took the money back for a finished order (a refund, a revocation): revoked.
    public static let orderRevoked = MessageID("order-revoked", "12d75d38b3024a59b9dd629a8919480a")
    /// The store reversed a refund: the revoked order is finished again.
    public static let orderReinstated = MessageID("order-reinstated", "735d43ef22bd4a2c90109e765c6defa8")
    /// A store notification names a transaction no order holds.
    public static let notificationUnmatched = MessageID("notification-unmatched", "bb230276707f4006ab3d30cad77e16ce")
    /// A store reported a purchase no order holds (DESIGN §5b): it waits for the phone's order.
    public static let purchaseDiscovered = MessageID("purchase-discovered", "471afc8a39224e4da4b11d348149756d")
    /// A discovered purchase's grace ended with no phone order: it became an order of its own.
    public static let discoveredOrderMade = MessageID("discovered-order-made", "eb1aa086894b4a49a06d7a3a1e1bbfe7")
    /// A discovered purchase carries no account to grant it to: a person decides.
    public static let discoveredNoAccount = MessageID("discovered-no-account", "a68760e3430343859187416f57926f11")
    /// An operator's `reconcilectl recover` made an order for a purchase of a customer's store order.
    public static let orderRecovered = MessageID("store-order-recovered", "14cc6ae2f4a4404da9157845f033cfd6")

    /// Every id the daemon logs, the logging machinery's own included.
    public static let all: [MessageID] = [
        started, stopping, reloaded, configurationError, fileRejected, ordersAccepted, finished, rejected,
        escalated, expired, circuitOpened, circuitClosed, suppressed, suppressedLines, storeUnavailable, duplicateIgnored, startFailed,
        spoolDirectoryRefused, storeLost, operatorBulkAction, actionEscalated, actionOverdue, orderRevoked, orderReinstated,
        notificationUnmatched, purchaseDiscovered, discoveredOrderMade, discoveredNoAccount, orderRecovered,
    ]

    /// The catalogued event with this id, if any.
    public static func catalogued(_ rawValue: String) -> MessageID? {
        all.first { $0.rawValue == rawValue }
    }
}
