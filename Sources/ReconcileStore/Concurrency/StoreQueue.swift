import Dispatch
import ReconcileCore
import ReconcileFoundation

/// The threads a store owns for ``SerializedStore``: every use of the store's connection runs
/// on the writer, one at a time (an executor too, on which the scheduler runs; a caller on a
/// thread of its own waits for its turn there, ``serially(_:)``); reads for reports run on a
/// reader queue of their own (the SQLite store reads them on a connection of its own). Each
/// store makes its own when it opens.
public final class StoreQueue: Sendable {
    /// The writer thread, as an executor.
    public let writer: DispatchQueueExecutor
    private let reader: DispatchQueueExecutor

    public init(label: String = "reconcile.store") {
        writer = DispatchQueueExecutor(label: label + ".write")
        reader = DispatchQueueExecutor(label: label + ".read")
    }

    /// Runs `body` (a store transaction) on the writer and returns what it returned.
    public func write<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await writer.run(body)
    }

    /// Runs `body` (a use of the store's connection) on the writer's turn and waits for it: at
    /// once when already on the writer (the scheduler, a `writing` block).
    public func serially<T>(_ body: () throws -> T) rethrows -> T {
        try writer.sync(body)
    }

    /// Runs `body` (a read for a report) on the reader queue.
    public func read<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await reader.run(body)
    }
}
