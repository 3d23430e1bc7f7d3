import ReconcileStore

/// What the daemon checks of its database before it uses it (docs/operating.md, "The store").
///
/// `PRAGMA quick_check` reads every page: measured on a store of 1,000,000 orders (3.6 GB, a
/// fifth still holding their receipts) it took 9 s with the file in the page cache and nearly
/// 2 min from a cold virtual disk (≈32 MB/s), which no start may cost every time. So:
/// - a write-ahead log with frames beside the database (the last stop was not clean, or the log
///   belongs to a database that was there before a copy): always the full check, whatever the
///   size — this is when a database and a log that do not belong together are put together;
/// - a database up to ``fullCheckLimit``: the full check (at most ≈0.2 s warm);
/// - a larger one after a clean stop: a cheap check — the file is as long as its header says
///   (a truncated or half-finished copy), and the root-to-last-leaf path of every table reads.
public enum StartupCheck {
    /// Databases up to this size get `PRAGMA quick_check` at every start.
    public static let fullCheckLimit: Int64 = 64 << 20

    /// How thoroughly to check.
    public enum Depth: Sendable, Hashable {
        /// `PRAGMA quick_check`; `logBeside`: because a log with frames lies beside the file.
        case full(logBeside: Bool)
        /// Size against the header, and one path through each table.
        case cheap
    }

    /// The depth for a database of `size` bytes, decided before SQLite opens (and replays) the
    /// log beside it.
    public static func depth(size: Int64, logHasFrames: Bool) -> Depth {
        if logHasFrames { return .full(logBeside: true) }
        return size <= fullCheckLimit ? .full(logBeside: false) : .cheap
    }

    /// The problems found; empty when the database looks sound.
    static func problems(_ connection: SQLiteConnection, depth: Depth, fileSize: Int64?) throws -> [String] {
        switch depth {
        case .full:
            let lines = try connection.query("PRAGMA quick_check(20)") { $0.optionalString(0) ?? "" }
            return lines == ["ok"] ? [] : lines.flatMap { $0.split(separator: "\n").map(String.init) }
                .filter { !$0.hasPrefix("*** in database") }
        case .cheap:
            var problems: [String] = []
            let pages = try connection.scalar("PRAGMA page_count") ?? 0
            let pageSize = try connection.scalar("PRAGMA page_size") ?? 0
            if let fileSize, pages * pageSize > fileSize {
                problems.append("the header counts \(pages) pages of \(pageSize) bytes but the file has \(fileSize) bytes (a truncated copy?)")
            }
            let tables = try connection.query(
                "SELECT name, sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ) { ($0.string(0), $0.int(1) == 1) }
            for (table, withoutRowID) in tables {
                // One descent from the root to a leaf (the last one, for tables with row ids).
                _ = try connection.query("SELECT * FROM \"\(table)\" \(withoutRowID ? "" : "ORDER BY rowid DESC ")LIMIT 1") { _ in 0 }
            }
            return problems
        }
    }
}
