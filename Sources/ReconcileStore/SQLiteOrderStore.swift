import CSQLite
import Foundation
import ReconcileCore
import Synchronization

/// The SQLite implementation of ``OrderStore`` (DESIGN §7): WAL, `synchronous=FULL`, a busy
/// timeout, numbered migrations, and one connection guarded by a mutex (plus, for the daemon, a
/// read-only one for counts that scan many index entries).
///
/// Each public method is one transaction. Callers that must not block a cooperative thread
/// (the daemon) call it from their own executor.
public final class SQLiteOrderStore: OrderStore {
    /// Who opens the store, which decides what it may do.
    public enum OpenMode: Sendable, Hashable {
        /// The daemon: creates the file, switches it to WAL and applies migrations (after
        /// copying it aside).
        case owner
        /// `reconcilectl` changing orders while no daemon runs: no creation, no migration.
        case operatorWrite
        /// `reconcilectl`'s read verbs.
        case readOnly
    }

    let connection: Mutex<SQLiteConnection>
    /// Opened on first use by ``withReader(_:)``.
    private let reader = Mutex<SQLiteConnection?>(nil)
    private let busyTimeout: Duration
    public let path: String
    public let mode: OpenMode

    /// Opens (and for the owner, creates and migrates) the store at `path`.
    ///
    /// - Parameter willMigrate: called before each migration step, with what it is about to do.
    /// - Throws: ``StoreError`` for a database that is foreign, newer, damaged or not migrated
    ///   (for non-owners), or ``SQLiteError``.
    public init(
        path: String, mode: OpenMode, busyTimeout: Duration = .seconds(5),
        migrator: SchemaMigrator = SchemaMigrator(), willMigrate: @Sendable (String) -> Void = { _ in }
    ) throws {
        self.path = path
        self.mode = mode
        self.busyTimeout = busyTimeout
        if mode != .owner && !FileManager.default.fileExists(atPath: path) {
            throw StoreError.missing(path: path)
        }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(
                path: path, mode: mode == .readOnly ? .readOnly : .readWrite(create: mode == .owner),
                busyTimeout: busyTimeout)
            // Look before touching: a foreign, newer or damaged file is refused before anything
            // (even the journal mode) is written to it.
            let version = try migrator.currentVersion(of: connection)
            try migrator.refuseNewer(version, path: path)
            if mode == .owner {
                let journalMode = try connection.queryFirst("PRAGMA journal_mode = WAL") { $0.string(0) }
                guard journalMode?.lowercased() == "wal" else {
                    throw StoreError.unreadable(path: path, reason: "cannot switch to WAL (journal_mode is \(journalMode ?? "unknown"))")
                }
            }
            // Receipts are money: a commit survives power loss (DESIGN §7).
            try connection.execute("PRAGMA synchronous = FULL")
            if mode == .owner {
                try migrator.migrate(connection, backup: true, willApply: willMigrate)
            } else if version < migrator.latestVersion {
                throw StoreError.needsMigration(path: path, found: version, latest: migrator.latestVersion)
            }
        } catch let error as SQLiteError where error.isNotADatabase || error.isCorrupt {
            throw StoreError.unreadable(path: path, reason: error.message)
        }
        self.connection = Mutex(connection)
    }

    /// Runs `body` with the connection, under the store's lock.
    func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try connection.withLock { connection in try body(connection) }
    }

    /// Runs `body` with a read-only connection of its own. In WAL mode it reads a snapshot
    /// without the store's lock, so a long count (the STATUS line's, over a million pending
    /// orders) never holds up a commit. Read-only stores use their one connection.
    func withReader<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard mode != .readOnly else { return try withConnection(body) }
        return try reader.withLock { reader in
            if reader == nil {
                reader = try SQLiteConnection(path: path, mode: .readOnly, busyTimeout: busyTimeout)
            }
            return try body(reader!)
        }
    }

    /// Runs `body` in a write transaction.
    func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction { try body(connection) } }
    }

    /// Closes the connection; the store cannot be used afterwards.
    public func close() {
        reader.withLock { $0?.close() }
        connection.withLock { $0.close() }
    }

    // MARK: - Reading

    static let orderColumns = """
        id, order_id, product_id, state, resume_state, receipt, transaction_id, signed_transaction,
        application_username, user_id, amount, currency, created_at, received_at, updated_at, next_attempt_at,
        attempts, delivery_attempts, content_hash, reason, lease_owner, leased_until, finished_by,
        verified_transaction_id, environment, pruned_at
        """

    static func order(from row: SQLiteRow) -> StoredOrder {
        StoredOrder(
            orderID: row.string(1), productID: row.string(2),
            state: OrderState(rawValue: row.string(3)) ?? .held,
            resumeState: row.optionalString(4).flatMap(OrderState.init(rawValue:)),
            proof: OrderProof(receipt: row.optionalString(5), transactionID: row.optionalString(6), signedTransaction: row.optionalString(7)),
            applicationUsername: row.optionalString(8), userID: row.optionalString(9), amount: row.optionalString(10),
            currency: row.optionalString(11), createdAt: row.optionalInt64(12).map(Date.init(epochMilliseconds:)),
            receivedAt: Date(epochMilliseconds: row.int64(13)), updatedAt: Date(epochMilliseconds: row.int64(14)),
            nextAttemptAt: row.optionalInt64(15).map(Date.init(epochMilliseconds:)), attempts: row.int(16),
            deliveryAttempts: row.int(17), contentHash: row.string(18), reason: row.optionalString(19),
            leaseOwner: row.optionalString(20), leasedUntil: row.optionalInt64(21).map(Date.init(epochMilliseconds:)),
            finishedBy: row.optionalString(22).flatMap(Finisher.init(rawValue:)), verifiedTransactionID: row.optionalString(23),
            environment: row.optionalString(24), prunedAt: row.optionalInt64(25).map(Date.init(epochMilliseconds:)))
    }

    public func order(id orderID: String) throws -> StoredOrder? {
        try withConnection { connection in
            try connection.queryFirst("SELECT \(Self.orderColumns) FROM orders WHERE order_id = ?", [.text(orderID)]) {
                Self.order(from: $0)
            }
        }
    }

    public func history(orderID: String) throws -> [TransitionRecord] {
        try withConnection { connection in
            try connection.query(
                """
                SELECT t.at, t.actor, t.from_state, t.to_state, t.reason, t.detail,
                       a.verifier_status, a.http_status, a.environment, a.endpoint, a.latency_ms
                FROM transitions t
                JOIN orders o ON o.id = t.order_ref
                LEFT JOIN attempts a ON a.id = t.attempt_ref
                WHERE o.order_id = ?
                ORDER BY t.id
                """, [.text(orderID)]
            ) { row in
                TransitionRecord(
                    at: Date(epochMilliseconds: row.int64(0)),
                    actor: TransitionActor(row.string(1)) ?? .daemon,
                    from: row.optionalString(2).flatMap(OrderState.init(rawValue:)),
                    to: OrderState(rawValue: row.string(3)) ?? .held,
                    reason: row.string(4), detail: row.optionalString(5),
                    verifierStatus: row.optionalInt64(6).map(Int.init), httpStatus: row.optionalInt64(7).map(Int.init),
                    environment: row.optionalString(8), endpoint: row.optionalString(9),
                    latencyMilliseconds: row.optionalInt64(10).map(Int.init))
            }
        }
    }

    /// Counts of the orders in `states` only: a range of the `(state, received_at)` index, so
    /// that a store of a million finished orders costs nothing here (the `STATUS=` line).
    public func countsByState(in states: [OrderState]) throws -> [OrderState: Int] {
        try withReader { connection in
            let pairs = try connection.query(Self.countsSQL(states)) {
                (OrderState(rawValue: $0.string(0)), $0.int(1))
            }
            var counts: [OrderState: Int] = [:]
            for (state, count) in pairs {
                if let state { counts[state] = count }
            }
            return counts
        }
    }

    static func countsSQL(_ states: [OrderState]) -> String {
        "SELECT state, count(*) FROM orders WHERE state IN (\(states.map { "'\($0.rawValue)'" }.joined(separator: ", "))) GROUP BY state"
    }

    public func countsByState() throws -> [OrderState: Int] {
        try withConnection { connection in
            let pairs = try connection.query(Self.countsSQL) {
                (OrderState(rawValue: $0.string(0)), $0.int(1))
            }
            var counts: [OrderState: Int] = [:]
            for (state, count) in pairs {
                if let state { counts[state] = count }
            }
            return counts
        }
    }

    // MARK: - Writing history

    /// Appends one transition to an order's history.
    static func recordTransition(
        _ connection: SQLiteConnection, orderRef: Int64, at: Date, actor: TransitionActor, from: OrderState?,
        to: OrderState, reason: String, detail: String? = nil, attemptRef: Int64? = nil
    ) throws {
        try connection.run(
            """
            INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail, attempt_ref)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .integer(orderRef), .integer(at.epochMilliseconds), .text(actor.description),
                .text(orNull: from?.rawValue), .text(to.rawValue), .text(reason), .text(orNull: detail),
                .integer(orNull: attemptRef),
            ])
    }

    // MARK: - Pruning

    public func pruneFinished(before cutoff: Date, now: Date) throws -> Int {
        // In batches, so that a large prune never holds the write lock for long.
        var total = 0
        while true {
            let pruned = try write { connection in
                try connection.run(
                    """
                    UPDATE orders SET receipt = NULL, signed_transaction = NULL, raw = NULL, pruned_at = ?
                    WHERE id IN (
                        SELECT id FROM orders
                        WHERE state IN ('finished', 'cancelled') AND pruned_at IS NULL AND updated_at < ?
                        LIMIT 500)
                    """, [.integer(now.epochMilliseconds), .integer(cutoff.epochMilliseconds)])
                return connection.changes
            }
            total += pruned
            if pruned < 500 { return total }
        }
    }

    // MARK: - Diagnostics

    /// The query plan SQLite chooses for `sql`, one detail line per step (for tests that prove
    /// an index is used).
    public func queryPlan(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> [String] {
        try withConnection { connection in
            try connection.query("EXPLAIN QUERY PLAN " + sql, parameters) { $0.string(3) }
        }
    }
}
