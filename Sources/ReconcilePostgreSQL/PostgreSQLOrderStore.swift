import ReconcileFoundation
import ReconcileStore
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
public final class PostgreSQLOrderStore: SharedOrderStore, RelationalOrderStore {
    let connection: Mutex<PostgreSQLConnection>
    /// Where the store is, without its password: for logs and errors.
    public let database: String
    /// The store's own threads (``SerializedStore``).
    public let queue = StoreQueue(label: "reconcile.store.postgresql")
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
    public func withConnection<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        // On the store's writer: a round trip waits there, whoever asked.
        try queue.serially {
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
    }

    /// Runs `body` in a transaction; again, from the start, when it lost a conflict with
    /// another transaction (PostgreSQL rolled it back whole). The pause between two tries is
    /// taken without the connection's lock, so other calls get the connection meanwhile.
    public func write<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        var conflicts = 0
        while true {
            do {
                return try withConnection { connection in try connection.transaction { try body(connection) } }
            } catch let error as PostgreSQLError where error.category == .conflict && conflicts < Self.conflictRetries {
                conflicts += 1
                // A little apart, so that the same two transactions do not meet again at once.
                usleep(UInt32.random(in: 1_000...(2_000 << conflicts)))
            }
        }
    }

    // MARK: - What only the shared store does

    /// This node's earlier starts (`node/…`): their attempts are over; other nodes' leases end
    /// by completion or, expired, by rescue.
    public var releasedLeasePrefix: String? { node + "/" }

    /// The database server's clock: every node measures a lease by the same clock.
    public func leaseClock(_ connection: PostgreSQLConnection) throws -> Date? {
        try Self.databaseClock(connection)
    }

    /// `NOTIFY reconcile`, sent when the transaction commits.
    public func wakeNodes(_ connection: PostgreSQLConnection) throws {
        try Self.notify(connection)
    }

    /// One `READ COMMITTED` transaction: each statement sees what was committed when it began, so
    /// figures read together may differ by what other nodes committed between them.
    public func readSnapshot<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction { try body(connection) } }
    }

    /// The store's one connection.
    public func withReader<T: Sendable>(_ body: (PostgreSQLConnection) throws -> T) throws -> T {
        try withConnection(body)
    }

    /// The due-order selection of `kind` as PostgreSQL runs it (for tests that prove its index).
    static func dueOrdersSQL(_ kind: WorkKind) -> String { dueOrders(kind, now: Date(), limit: 1).render(.postgresql).sql }

    /// The next due time of `kind` as PostgreSQL runs it (for tests that prove its index).
    static func nextDueSQL(_ kind: WorkKind) -> String { nextDue(kind).render(.postgresql).sql }

    /// The database server's clock, for what the shared store times by it (leases).
    static func databaseClock(_ connection: PostgreSQLConnection) throws -> Date {
        Date(epochMilliseconds: try connection.scalar("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint") ?? 0)
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
                return try StoreTransaction(connection).pruneFinished(before: cutoff, now: now, limit: 500)
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
