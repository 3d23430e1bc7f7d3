import ReconcileFoundation
import ReconcileSQLite
import ReconcileStore
import Foundation
import ReconcileCore

/// `reconcilectl copy-store`: an SQLite store copied whole into an empty PostgreSQL database
/// (DESIGN §7) — orders with their raw files, history, attempts, claimed transactions and the
/// outbox of follow-up requests, the store notifications taken in and the polling checkpoints,
/// keys kept — in one
/// PostgreSQL transaction, then the rows of every table counted on both sides.
/// The daemon must be stopped (the caller holds the store's lock).
public enum StoreCopy {
    /// The tables copied, parents first.
    public static let tables = [
        "orders", "order_proofs", "attempts", "transitions", "claims", "outbox", "notifications", "checkpoints", "discovered_purchases",
    ]

    /// How a table's rows are keyed: the column pages are read in order of, whether it holds text,
    /// and whether it is an identity column whose sequence must go on after the copy.
    struct Key {
        var column: String
        var isText: Bool
        var isIdentity: Bool
    }

    /// Each table's key: the identity column `id`, but for claims (by transaction id),
    /// checkpoints (by name) and the proofs (by their order's key).
    static func key(of table: String) -> Key {
        switch table {
        case "order_proofs": Key(column: "order_ref", isText: false, isIdentity: false)
        case "claims": Key(column: "transaction_id", isText: true, isIdentity: false)
        case "checkpoints": Key(column: "name", isText: true, isIdentity: false)
        default: Key(column: "id", isText: false, isIdentity: true)
        }
    }

    /// Rows per table, as counted after the copy on both sides.
    public struct Counts: Sendable, Hashable {
        public var rows: [String: Int]
    }

    /// Why a copy was refused or failed: nothing was committed to the target, but for
    /// `countsDifferAfterCommit`, which says what was.
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case targetNotEmpty(database: String, orders: Int)
        case schemaMismatch(source: Int, target: Int)
        case countsDiffer(table: String, source: Int, target: Int)
        /// The copy was committed (`committed`: rows per table), but counting again afterwards
        /// found `table` different on the two sides.
        case countsDifferAfterCommit(table: String, source: Int, target: Int, committed: Counts)

        public var description: String {
            switch self {
            case .targetNotEmpty(let database, let orders):
                "\(database) already holds \(Plural.count(orders, "order")); copy-store copies into an empty database only"
            case .schemaMismatch(let source, let target):
                "the SQLite store has schema version \(source) and the PostgreSQL one \(target); start this version's reconciled once on the SQLite store to migrate it first"
            case .countsDiffer(let table, let source, let target):
                "\(table): \(source) rows in the SQLite store but \(target) in PostgreSQL after the copy; nothing was committed"
            case .countsDifferAfterCommit(let table, let source, let target, let committed):
                "the copy was committed (\(tables.map { "\(committed.rows[$0] ?? 0) \($0)" }.joined(separator: ", "))), "
                    + "but counted again, \(table) has \(source) rows in the SQLite store and \(target) in PostgreSQL; "
                    + "the PostgreSQL database holds the copy: find what changed it before starting the daemons on it"
            }
        }
    }

    /// Copies `source` into `target` (migrated, empty); returns the counts, equal on both sides.
    ///
    /// - Parameter rows: called after each page of rows with the rows copied so far, of all
    ///   tables, and the source's total (a progress line).
    /// - Parameter progress: called after each table with its name and row count.
    /// - Parameter afterCommit: run between the commit and the second count (for tests).
    public static func copy(
        from source: SQLiteOrderStore, to target: PostgreSQLOrderStore, rows: (_ done: Int, _ total: Int) -> Void = { _, _ in },
        progress: (String, Int) -> Void = { _, _ in }, afterCommit: () throws -> Void = {}
    ) throws -> Counts {
        let sourceVersion = try source.withConnection { try SchemaMigrator().currentVersion(of: $0) }
        try target.withConnection { connection in
            let version = try PostgreSQLMigrator().currentVersion(of: connection)
            guard version == sourceVersion else { throw Failure.schemaMismatch(source: sourceVersion, target: version) }
            let orders = Int(try connection.scalar("SELECT count(*) FROM orders") ?? 0)
            guard orders == 0 else { throw Failure.targetNotEmpty(database: target.database, orders: orders) }
        }
        var counts: [String: Int] = [:]
        let total = try tables.reduce(0) { sum, table in
            sum + Int(try source.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") } ?? 0)
        }
        var done = 0
        try target.withConnection { connection in
            try connection.transaction {
                for table in tables {
                    let copied = try copy(table: table, from: source, to: connection) { page in
                        done += page
                        rows(done, total)
                    }
                    let stored = Int(try connection.scalar("SELECT count(*) FROM \(table)") ?? 0)
                    // Against the source's own count too, not only the rows read: any row the
                    // copy missed is caught before the commit.
                    let held = Int(try source.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") } ?? 0)
                    guard stored == copied, copied == held else { throw Failure.countsDiffer(table: table, source: held, target: stored) }
                    if key(of: table).isIdentity {
                        // Identity columns go on after the highest key copied.
                        try connection.run("SELECT setval(pg_get_serial_sequence('\(table)', 'id'), coalesce(max(id), 0) + 1, false) FROM \(table)")
                    }
                    counts[table] = stored
                    progress(table, stored)
                }
            }
        }
        try afterCommit()
        // Counted again from the committed data, on both sides.
        for table in tables {
            let here = Int(try source.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") } ?? 0)
            let there = Int(try target.withConnection { try $0.scalar("SELECT count(*) FROM \(table)") } ?? 0)
            guard here == there, there == counts[table] else {
                throw Failure.countsDifferAfterCommit(table: table, source: here, target: there, committed: Counts(rows: counts))
            }
        }
        return Counts(rows: counts)
    }

    /// Copies one table in batches of multi-row inserts; returns the rows read.
    private static func copy(
        table: String, from source: SQLiteOrderStore, to connection: PostgreSQLConnection, onPage: (Int) -> Void
    ) throws -> Int {
        // The columns both sides have, with SQLite's declared types (BLOB is bytea).
        let columns = try source.withConnection { connection in
            try connection.query("SELECT name, upper(type) FROM pragma_table_info('\(table)') ORDER BY cid") { ($0.string(0), $0.string(1)) }
        }
        let targetColumns = Set(try connection.query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1", [.text(table)]
        ) { $0.string(0) })
        let shared = columns.filter { targetColumns.contains($0.0) }
        let names = shared.map(\.0).joined(separator: ", ")
        let batch = max(1, 30_000 / max(1, shared.count))
        var copied = 0
        let key = Self.key(of: table)
        // No lower bound for the first page: every key is above it, the empty text too.
        var after: SQLiteValue?
        while true {
            // Keyset pages in key order, so that a large store is never read whole into memory.
            let page = try source.withConnection { connection in
                try connection.query(
                    "SELECT \(key.column), \(names) FROM \(table)\(after == nil ? "" : " WHERE \(key.column) > ?") ORDER BY \(key.column) LIMIT ?",
                    (after.map { [$0] } ?? []) + [.integer(Int64(batch))]
                ) { row -> (SQLiteValue, [PostgreSQLValue]) in
                    let values = shared.enumerated().map { index, column -> PostgreSQLValue in
                        let position = Int32(index + 1)
                        if row.isNull(position) { return .null }
                        if column.1.contains("BLOB") { return .bytes(row.blob(position)) }
                        if column.1.contains("INT") { return .integer(row.int64(position)) }
                        return .text(row.string(position))
                    }
                    return (key.isText ? .text(row.string(0)) : .integer(row.int64(0)), values)
                }
            }
            guard let last = page.last else { break }
            after = last.0
            let width = shared.count
            let placeholders = page.indices.map { row in
                "(" + (1...width).map { "$\(row * width + $0)" }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
            try connection.run("INSERT INTO \(table) (\(names)) VALUES \(placeholders)", page.flatMap(\.1))
            copied += page.count
            onPage(page.count)
            if page.count < batch { break }
        }
        return copied
    }
}
