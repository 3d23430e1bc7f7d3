import Dispatch

/// Where the daemon's tasks run their store calls (GRDB's `SerializedDatabase` is the model): a
/// transaction waits for an `fsync` or a PostgreSQL round trip on a thread of the store's, never
/// on one of the cooperative pool's few threads (two on a two-core machine), and a task awaits
/// it without holding one.
///
/// Writes run one at a time on the writer queue. Reads for reports (the `STATUS=` counts, the
/// metrics file) run on a reader queue of their own, so that a long write never holds up the
/// report that would show it (the SQLite store reads them on a connection of its own). The
/// scheduler and the spool ingest are actors on executors of their own and call the store there.
public final class StoreQueue: Sendable {
    private let writer: DispatchQueue
    private let reader: DispatchQueue

    public init(label: String = "reconcile.store") {
        writer = DispatchQueue(label: label + ".write")
        reader = DispatchQueue(label: label + ".read")
    }

    /// Runs `body` (a store transaction) on the writer queue and returns what it returned.
    public func write<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Self.run(body, on: writer)
    }

    /// Runs `body` (a read for a report) on the reader queue.
    public func read<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await Self.run(body, on: reader)
    }

    private static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T, on queue: DispatchQueue) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
