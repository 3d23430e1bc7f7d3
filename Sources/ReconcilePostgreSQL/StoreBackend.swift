import ReconcileCore

/// Which store a configuration names, and how to reach it: the SQLite file, or the shared
/// PostgreSQL database with its connection options. `reconciled` and `reconcilectl` both decide
/// with this one type, and switch on it where they differ.
public enum StoreBackend: Sendable {
    /// `[State] Database=` a path: one daemon's SQLite store.
    case sqlite(path: String)
    /// `[State] Database=postgresql://…`: the store several daemons share (DESIGN §7).
    case postgresql(PostgreSQLConnectionOptions)

    /// The store `configuration` names; `password` (read from `PasswordCredential=` or
    /// `PasswordFile=` by the caller) goes with PostgreSQL's options.
    public init(_ configuration: Configuration, password: String?, applicationName: String = "reconciled") {
        let database = configuration.state.database
        self = configuration.state.isShared
            ? .postgresql(PostgreSQLConnectionOptions(uri: database, password: password, applicationName: applicationName))
            : .sqlite(path: database)
    }

    /// The store as messages name it: the path, or the URI without its password.
    public var displayName: String {
        switch self {
        case .sqlite(let path): path
        case .postgresql(let options): options.redactedURI
        }
    }
}
