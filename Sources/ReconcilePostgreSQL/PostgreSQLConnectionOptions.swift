import ReconcileStore
import Foundation

/// Where a PostgreSQL connection goes: a libpq connection URI
/// (`postgresql://reconciled@db.example/reconcile?sslmode=verify-full`, or a `key=value` string)
/// and, apart from it, the password (`PasswordCredential=`), which overrides one in the URI.
///
/// Printing it (`description`, `debugDescription`, `dump`) shows the URI as libpq reads it, with
/// any password in it replaced by `***`, and never the password.
public struct PostgreSQLConnectionOptions: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The libpq connection string, exactly as configured.
    public var uri: String
    public var password: String?
    /// Shown in `pg_stat_activity` unless the URI sets one.
    public var applicationName: String
    /// Seconds to wait for a connection, unless the URI sets `connect_timeout`.
    public var connectTimeoutSeconds: Int
    /// Seconds the network may stay silent before the connection counts as lost (TCP keepalives
    /// and `tcp_user_timeout`), unless the URI sets them: a host cut off from the database finds
    /// out within this, instead of after the kernel's retransmissions (a quarter of an hour).
    public var networkTimeoutSeconds: Int
    /// `lock_timeout`, `statement_timeout` and `idle_in_transaction_session_timeout` for the
    /// session, in seconds (0: none): a stuck node holding a row lock cannot block the others
    /// for longer.
    public var lockTimeoutSeconds: Int
    public var statementTimeoutSeconds: Int
    public var idleInTransactionTimeoutSeconds: Int

    public init(
        uri: String, password: String? = nil, applicationName: String = "reconciled", connectTimeoutSeconds: Int = 10,
        networkTimeoutSeconds: Int = 10, lockTimeoutSeconds: Int = 10, statementTimeoutSeconds: Int = 60,
        idleInTransactionTimeoutSeconds: Int = 60
    ) {
        self.uri = uri
        self.password = password
        self.applicationName = applicationName
        self.connectTimeoutSeconds = connectTimeoutSeconds
        self.networkTimeoutSeconds = networkTimeoutSeconds
        self.lockTimeoutSeconds = lockTimeoutSeconds
        self.statementTimeoutSeconds = statementTimeoutSeconds
        self.idleInTransactionTimeoutSeconds = idleInTransactionTimeoutSeconds
    }

    /// libpq's keywords for the network time-out, before the URI's (which override them).
    var networkParameters: [(String, String)] {
        let seconds = max(2, networkTimeoutSeconds)
        return [
            ("keepalives", "1"), ("keepalives_idle", String(max(1, seconds / 2))), ("keepalives_interval", "1"),
            ("keepalives_count", String(max(1, seconds - seconds / 2))), ("tcp_user_timeout", String(seconds * 1000)),
        ]
    }

    /// The session's `SET` statements (run after every connect).
    var sessionSettings: String {
        "SET lock_timeout = \(lockTimeoutSeconds * 1000); SET statement_timeout = \(statementTimeoutSeconds * 1000); "
            + "SET idle_in_transaction_session_timeout = \(idleInTransactionTimeoutSeconds * 1000)"
    }

    /// The URI without its password: what logs and errors may show.
    public var redactedURI: String { Self.redacted(uri) }

    public var description: String { redactedURI }
    public var debugDescription: String { "PostgreSQLConnectionOptions(\(redactedURI)\(password == nil ? "" : ", password: ***"))" }
    public var customMirror: Mirror { Mirror(self, children: ["uri": redactedURI, "password": password == nil ? "none" : "***"]) }

    /// `connection` as libpq parses it, with every secret option (`password`, `sslpassword`)
    /// as `***` (``PostgreSQLConnectionString``); a string libpq cannot parse is not shown.
    static func redacted(_ connection: String) -> String {
        PostgreSQLConnectionString(connection).redacted
    }
}
