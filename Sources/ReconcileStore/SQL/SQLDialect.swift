/// The few places where SQLite's and PostgreSQL's SQL differ, and nothing else: how a bound
/// value is named, how a list is matched, row locks, and index hints. Statements are written
/// once (``SQLStatement``) and rendered for the connection's dialect.
public enum SQLDialect: Sendable, Hashable {
    case sqlite
    case postgresql

    /// The placeholder of the `number`th bound value (1-based): `?` or `$n`.
    package func placeholder(_ number: Int) -> String {
        switch self {
        case .sqlite: "?"
        case .postgresql: "$\(number)"
        }
    }

    /// Whether rows are locked by `FOR UPDATE` (PostgreSQL); SQLite has one writer at a time and
    /// no row locks, so lock clauses render as nothing there.
    public var locksRows: Bool { self == .postgresql }
}

/// A clause that only one dialect writes, or writes its own way.
public enum SQLClause: Sendable, Hashable {
    /// `FOR UPDATE` (PostgreSQL); nothing on SQLite.
    case forUpdate
    /// `FOR UPDATE OF alias` (PostgreSQL); nothing on SQLite.
    case forUpdateOf(String)
    /// `FOR UPDATE SKIP LOCKED`: rows another transaction holds are passed over (PostgreSQL).
    case forUpdateSkipLocked
    /// `FOR UPDATE OF alias SKIP LOCKED` (PostgreSQL).
    case forUpdateOfSkipLocked(String)
    /// `INDEXED BY name` (SQLite): pins the index the planner would otherwise not prove usable;
    /// nothing on PostgreSQL, whose planner takes partial indexes on its own.
    case indexedBy(String)
    /// The larger of two expressions: `max(a, b)` on SQLite, `GREATEST(a, b)` on PostgreSQL.
    case greatest(String, String)

    package func render(_ dialect: SQLDialect) -> String {
        switch (self, dialect) {
        case (.indexedBy(let index), .sqlite): "INDEXED BY \(index)"
        case (.greatest(let a, let b), .sqlite): "max(\(a), \(b))"
        case (.greatest(let a, let b), .postgresql): "GREATEST(\(a), \(b))"
        case (_, .sqlite), (.indexedBy, .postgresql): ""
        case (.forUpdate, .postgresql): "FOR UPDATE"
        case (.forUpdateOf(let alias), .postgresql): "FOR UPDATE OF \(alias)"
        case (.forUpdateSkipLocked, .postgresql): "FOR UPDATE SKIP LOCKED"
        case (.forUpdateOfSkipLocked(let alias), .postgresql): "FOR UPDATE OF \(alias) SKIP LOCKED"
        }
    }
}
