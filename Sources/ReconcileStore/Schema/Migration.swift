/// One numbered step of the schema. A migration that has shipped is never edited: a change is a
/// new migration.
public struct Migration: Sendable, Hashable {
    public var version: Int
    public var name: String
    public var sql: String
    /// SQLite: the migration rebuilds a table others refer to, so foreign keys are off while it
    /// runs and checked (`PRAGMA foreign_key_check`) before it commits.
    public var rebuildsTables: Bool

    public init(version: Int, name: String, rebuildsTables: Bool = false, sql: String) {
        self.version = version
        self.name = name
        self.rebuildsTables = rebuildsTables
        self.sql = sql
    }
}
