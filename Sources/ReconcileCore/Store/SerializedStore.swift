/// A store that runs the daemon's tasks' calls on threads of its own (GRDB's
/// `SerializedDatabase` is the model): a task awaits its transaction without holding a thread,
/// and an `fsync` or a PostgreSQL round trip never blocks one of the cooperative pool's few
/// threads (two on a two-core machine).
///
/// The store's synchronous methods stay for the callers that own a thread of their own (the
/// scheduler and the spool ingest, actors on executors of their own, and the command line).
public protocol SerializedStore: Sendable {
    /// Runs `body` (one or more of the store's calls) on the store's writer thread, after the
    /// writes queued before it, and returns what it returned.
    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T

    /// Runs `body` (a read for a report: counts, the metrics file) on the store's reader
    /// thread, so that a long write never holds up the report that would show it.
    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T
}
