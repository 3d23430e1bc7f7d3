/// What `[State] Database=` names: an SQLite file, or a PostgreSQL connection URI (DESIGN §7,
/// "Shared store").
public enum StateDatabase {
    /// Whether `value` is a libpq connection URI (`postgresql://…` or `postgres://…`).
    public static func isPostgreSQL(_ value: String) -> Bool {
        let lowered = value.lowercased()
        return lowered.hasPrefix("postgresql://") || lowered.hasPrefix("postgres://")
    }
}
