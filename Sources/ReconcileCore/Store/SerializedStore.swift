/// A store that runs the daemon's tasks' calls on threads of its own (GRDB's
/// `SerializedDatabase` is the model): a task awaits its transaction without holding a thread,
/// and an `fsync` or a PostgreSQL round trip never blocks one of the cooperative pool's few
/// threads (two on a two-core machine).
///
/// The store's synchronous methods stay for the scheduler, which runs on the store's writer
/// thread (``executor``), and for callers with a thread of their own (the control socket's, the
/// metrics', the command line).
public protocol SerializedStore: Sendable {
    /// The store's writer thread as an executor: an actor whose work is mostly the store's (the
    /// scheduler) runs there and calls the synchronous methods without a hop, in turn with the
    /// other writes.
    var executor: UnownedSerialExecutor { get }

    /// Runs `body` (one or more of the store's calls) on the store's writer thread, after the
    /// writes queued before it, and returns what it returned.
    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T

    /// Runs `body` (a read for a report: counts, the metrics file) on the store's reader
    /// thread, so that a long write never holds up the report that would show it.
    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T
}
