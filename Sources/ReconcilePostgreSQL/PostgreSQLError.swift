import ReconcileStore
import ReconcileCore

/// An error from PostgreSQL or libpq: the SQLSTATE, a message, the statement's SQL (with `$n`
/// placeholders) and what kind of failure it is, so that a caller can tell a lost connection
/// (reconnect and try again) from a conflict between transactions (run it again) from a refused
/// row (a bug or a race the caller handles) from anything else.
///
/// Never in it: parameter values (receipts, tokens) and the password. The server's DETAIL, HINT
/// and CONTEXT fields, which quote rows and values (`Key (transaction_id)=(…) already exists`),
/// are not read; of the primary message, the one class that quotes the offending value (data
/// exceptions, SQLSTATE class 22: `invalid input syntax for type bigint: "…"`) is replaced by
/// fixed words.
public struct PostgreSQLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure, for deciding what to do next.
    public enum Category: String, Sendable, Hashable {
        /// The connection is gone or could not be made (SQLSTATE class 08, a server shutting
        /// down, or libpq's own connection errors): reconnect, then try again.
        case connection
        /// Serialization failure (40001) or deadlock (40P01): the transaction was rolled back
        /// whole and may simply run again.
        case conflict
        /// An integrity constraint refused the row (class 23: unique, foreign key, check, not null).
        case constraint
        /// Anything else (a syntax error, a full disk, a read-only server).
        case other
    }

    public var category: Category
    /// The five-character SQLSTATE, when the server sent one (`nil` for libpq's own errors).
    public var sqlState: String?
    /// What went wrong, in the server's or libpq's words (see the type's note on what is left out).
    public var message: String
    /// The constraint that refused the row, for class 23.
    public var constraint: String?
    /// The statement's SQL text, with `$n` placeholders.
    public var sql: String?
    /// The connection was lost while `COMMIT` was on its way: the transaction may or may not have
    /// committed, so running it again is not safe without looking first.
    public var commitOutcomeUnknown: Bool

    public init(
        category: Category, sqlState: String? = nil, message: String, constraint: String? = nil, sql: String? = nil,
        commitOutcomeUnknown: Bool = false
    ) {
        self.category = category
        self.sqlState = sqlState
        self.message = message
        self.constraint = constraint
        self.sql = sql
        self.commitOutcomeUnknown = commitOutcomeUnknown
    }

    /// An error the server reported with `sqlState` and its primary message.
    init(sqlState: String, primaryMessage: String, constraint: String?, sql: String?) {
        let category = Self.category(of: sqlState)
        let message = sqlState.hasPrefix("22")
            ? "the server refused a value as invalid for its type (data exception)"
            : primaryMessage
        self.init(category: category, sqlState: sqlState, message: message, constraint: constraint, sql: sql)
    }

    /// Text holding a NUL character, which PostgreSQL's text cannot store (`what`: "text",
    /// "text array"); the error never quotes the value.
    static func nulInText(_ what: String = "text") -> PostgreSQLError {
        PostgreSQLError(category: .other, message: "a \(what) parameter contains a NUL character, which PostgreSQL cannot store")
    }

    /// A check held until `COMMIT` (``PostgreSQLConnection/checkBeforeCommit(_:what:)``) found
    /// that another transaction committed first: a conflict, which the shared store runs again.
    static func committedFirst(_ what: String, sql: String?) -> PostgreSQLError {
        PostgreSQLError(category: .conflict, message: "another transaction committed first: \(what)", sql: sql)
    }

    /// The category of a SQLSTATE.
    public static func category(of sqlState: String) -> Category {
        switch sqlState {
        case "40001", "40P01": .conflict
        // admin_shutdown, crash_shutdown, cannot_connect_now, idle_session_timeout: the server
        // ended the session.
        case "57P01", "57P02", "57P03", "57P05": .connection
        default:
            if sqlState.hasPrefix("08") { .connection } else if sqlState.hasPrefix("23") { .constraint } else { .other }
        }
    }

    /// Whether running the same transaction again may succeed: a conflict, or a lost connection
    /// unless it was lost during `COMMIT`.
    public var isRetryable: Bool {
        switch category {
        case .conflict: true
        case .connection: !commitOutcomeUnknown
        case .constraint, .other: false
        }
    }

    /// A unique index refused the row (23505).
    public var isUniqueViolation: Bool { sqlState == "23505" }

    public var description: String {
        var text = "PostgreSQL error"
        if let sqlState { text += " \(sqlState)" }
        text += " (\(category.rawValue)): \(message)"
        if let constraint { text += " (constraint \(constraint))" }
        if commitOutcomeUnknown { text += "; the connection was lost during COMMIT, so whether it committed is unknown" }
        if let sql { text += " [\(SQLStatement.excerpt(of: sql))]" }
        return text
    }
}

extension PostgreSQLError: ClassifiedStoreError {
    public var storeFailure: StoreFailure {
        switch sqlState {
        case "53100": return .diskFull
        case "25006": return .readOnly  // read_only_sql_transaction: a standby, or default_transaction_read_only
        case "55P03": return .busy  // lock_not_available
        default:
            switch category {
            case .conflict: return .busy
            case .connection: return .unavailable
            case .constraint, .other: return .other
            }
        }
    }
}
