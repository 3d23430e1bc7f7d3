import Foundation
import ReconcileCore
import Synchronization

/// The PostgreSQL implementation of ``OrderStore`` (DESIGN §7, "Shared store"): several stores —
/// daemons on one host or many — share one database. Every method is one `READ COMMITTED`
/// transaction that reads ``OrderRecord``s (rows it changes locked `FOR UPDATE`), asks the core's
/// rules, and writes the ``OrderPlan``s they return; it decides nothing itself. Due orders are
/// leased with `FOR UPDATE SKIP LOCKED`, so two stores never lease one order; transaction claims
/// are unique in the table, so two stores never grant one purchase twice.
///
/// One connection, behind a mutex. A transaction that lost a conflict (deadlock, serialization
/// failure) runs again, and so does one whose connection was lost before `COMMIT` (after
/// reconnecting); one whose connection was lost during `COMMIT` is reported, never repeated.
/// Callers that must not block a cooperative thread call it from their own executor.
///
/// As a ``SharedOrderStore`` it knows its node (`[Daemon] Node=`): leases are owned by the node
/// and this start of it (``leaseOwner``), released at start only for this node, rescued by any
/// node when they expire, and renewed while attempts run (`PostgreSQLOrderStore+Nodes`).
public final class PostgreSQLOrderStore: SharedOrderStore {
    let connection: Mutex<PostgreSQLConnection>
    /// Where the store is, without its password: for logs and errors.
    public let database: String
    public let node: String
    public let leaseOwner: String
    /// The channel nodes `LISTEN` on and every wake-up is sent to.
    public static let channel = "reconcile"

    /// How often a transaction that lost a conflict with another runs again before the error is
    /// thrown.
    static let conflictRetries = 6

    /// Connects and (when `migrate`) brings the schema to the newest version.
    ///
    /// - Parameters:
    ///   - migrate: apply pending migrations (the daemon); otherwise a database that needs them
    ///     is refused (`reconcilectl`).
    ///   - willMigrate: called before each migration step this store applies.
    /// - Throws: ``PostgreSQLStoreError`` for a database that is foreign, newer or not migrated,
    ///   or ``PostgreSQLError``.
    ///   - node: this daemon's node name (no `/`); the lease owner is `node/`, a random part,
    ///     and `@host:pid` (`host`, `processID`), which tells another start under the same name
    ///     where it runs (``liveNamesake(heartbeatInterval:sleep:)``).
    public init(
        options: PostgreSQLConnectionOptions, node: String = ProcessInfo.processInfo.hostName, migrate: Bool = true,
        migrator: PostgreSQLMigrator = PostgreSQLMigrator(), willMigrate: @Sendable (String) -> Void = { _ in },
        host: String = ProcessInfo.processInfo.hostName, processID: Int32 = getpid()
    ) throws {
        precondition(!node.contains("/"), "a node name has no '/'")
        self.node = node
        let origin = String(host.map { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) ? $0 : "_" }.prefix(100))
        leaseOwner = "\(node)/\(String(UInt64.random(in: 0...UInt64.max), radix: 36))@\(origin):\(processID)"
        let connection = try PostgreSQLConnection(options)
        let version = try migrator.currentVersion(of: connection)
        try migrator.refuseNewer(version, database: options.redactedURI)
        if migrate {
            try migrator.migrate(connection, willApply: willMigrate)
        } else if version < migrator.latestVersion {
            throw PostgreSQLStoreError.needsMigration(database: options.redactedURI, found: version, latest: migrator.latestVersion)
        }
        database = options.redactedURI
        self.connection = Mutex(connection)
    }

    /// Where the store is, as logs name it (the URI without its password).
    public var location: String { database }

    /// Closes the connection; the store cannot be used afterwards.
    public func close() {
        connection.withLock { $0.close() }
    }

    /// Runs `body` with the connection, under the store's lock; once more after reconnecting when
    /// the connection was lost (unless during `COMMIT`).
    func withConnection<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try connection.withLock { connection in
            var attempt = 0
            while true {
                attempt += 1
                do {
                    if !connection.isConnected { try connection.reconnect() }
                    return try body(connection)
                } catch let error as PostgreSQLError where error.category == .connection && !error.commitOutcomeUnknown && attempt < 2 {
                    continue
                }
            }
        }
    }

    /// Runs `body` in a transaction; again, from the start, when it lost a conflict with
    /// another transaction (PostgreSQL rolled it back whole).
    func write<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try withConnection { connection in
            var conflicts = 0
            while true {
                do {
                    return try connection.transaction { try body(connection) }
                } catch let error as PostgreSQLError where error.category == .conflict && conflicts < Self.conflictRetries {
                    conflicts += 1
                    // A little apart, so that the same two transactions do not meet again at once.
                    usleep(UInt32.random(in: 1_000...(2_000 << conflicts)))
                }
            }
        }
    }

    // MARK: - Reading

    public func order(id orderID: String) throws -> StoredOrder? {
        try withConnection { connection in
            try connection.queryFirst("SELECT \(OrderColumns.record) FROM orders WHERE order_id = $1", [.text(orderID)]) {
                OrderColumns.record(from: $0).storedOrder
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
                WHERE o.order_id = $1
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

    public func countsByState() throws -> [OrderState: Int] {
        try withConnection { connection in
            let pairs = try connection.query("SELECT state, count(*) FROM orders GROUP BY state") {
                (OrderState(rawValue: $0.string(0)), $0.int(1))
            }
            var counts: [OrderState: Int] = [:]
            for (state, count) in pairs {
                if let state { counts[state] = count }
            }
            return counts
        }
    }

    // MARK: - Pruning

    /// The advisory lock a node holds while it prunes a batch.
    static let pruneLockKey: Int64 = PostgreSQLMigrator.lockKey + 1

    public func pruneFinished(before cutoff: Date, now: Date) throws -> Int {
        // In batches, so that a large prune never holds many row locks for long; rows another
        // node is pruning are skipped.
        var total = 0
        while true {
            let pruned = try write { connection -> Int in
                // One node prunes at a time; the others find the lock taken and leave it to it.
                guard try connection.queryFirst("SELECT pg_try_advisory_xact_lock($1)", [.integer(Self.pruneLockKey)], { $0.bool(0) }) == true
                else { return 0 }
                return try connection.run(
                    """
                    UPDATE orders SET receipt = NULL, signed_transaction = NULL, raw = NULL, pruned_at = $1
                    WHERE id IN (
                        SELECT id FROM orders
                        WHERE state IN ('finished', 'cancelled') AND pruned_at IS NULL AND updated_at < $2
                        ORDER BY updated_at
                        LIMIT 500
                        FOR UPDATE SKIP LOCKED)
                    """, [.integer(now.epochMilliseconds), .integer(cutoff.epochMilliseconds)])
            }
            total += pruned
            if pruned < 500 { return total }
        }
    }

    // MARK: - Diagnostics

    /// The plan PostgreSQL chooses for `sql`, one line per step (for tests that prove an index
    /// is used).
    public func queryPlan(_ sql: String, _ parameters: [PostgreSQLValue] = []) throws -> [String] {
        try withConnection { connection in
            try connection.query("EXPLAIN " + sql, parameters, format: .text) { $0.string(0) }
        }
    }
}
