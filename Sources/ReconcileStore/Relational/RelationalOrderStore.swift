import Foundation
import ReconcileCore

/// The one order store over both engines (DESIGN §7). Every method of ``OrderStore``, ``DiscoveryStore``,
/// ``OutboxStore``, ``NotificationStore``, ``CheckpointStore`` and ``OperableOrderStore`` is
/// written once, in the extensions of this protocol, as read → rule → write in one transaction
/// (``StoreTransaction``), with statements written once for both dialects (``SQLStatement``).
///
/// An engine supplies only what is truly its own: how a connection is held and a transaction
/// run (SQLite's file checks, PostgreSQL's reconnects and conflict retries), which leases a
/// start releases, the clock leases end by, and how other nodes are woken.
public protocol RelationalOrderStore: OperableOrderStore, DiscoveryStore {
    associatedtype Connection: RelationalConnection

    /// The store's own threads, on which ``SerializedStore``'s calls run.
    var queue: StoreQueue { get }

    /// Runs `body` with the connection, outside a transaction (single reads).
    func withConnection<T: Sendable>(_ body: (Connection) throws -> T) throws -> T

    /// Runs `body` in one read snapshot (several reads that must agree).
    func readSnapshot<T: Sendable>(_ body: (Connection) throws -> T) throws -> T

    /// Runs `body` with a connection for long counts that must not hold up commits (SQLite: a
    /// read-only connection of its own).
    func withReader<T: Sendable>(_ body: (Connection) throws -> T) throws -> T

    /// Runs `body` in a write transaction: committed when it returns, rolled back when it throws.
    func write<T: Sendable>(_ body: (Connection) throws -> T) throws -> T

    /// The owners whose leases ``OrderStore/releaseLeases(now:)`` gives back at start: `nil`
    /// for every lease (one daemon per store: any lease is a crash's), or the prefix of this
    /// node's earlier starts (`node/`).
    var releasedLeasePrefix: String? { get }

    /// The clock leases end by, read inside the transaction: the database server's on a shared
    /// store (hosts whose clocks disagree still agree on when a lease ends); `nil` for the
    /// caller's `now`.
    func leaseClock(_ connection: Connection) throws -> Date?

    /// Wakes the other nodes when the transaction commits (after changes that made orders
    /// due); nothing on a store with one daemon.
    func wakeNodes(_ connection: Connection) throws
}

extension RelationalOrderStore {
    public var executor: UnownedSerialExecutor { queue.writer.asUnownedSerialExecutor() }

    public func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await queue.write(body)
    }

    public func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await queue.read(body)
    }

    public var releasedLeasePrefix: String? { nil }
    public func leaseClock(_ connection: Connection) throws -> Date? { nil }
    public func wakeNodes(_ connection: Connection) throws {}
}
