import Foundation
import ReconcileCore

/// What the daemon's reports and `reconcilectl` need of a store beyond ``OrderStore``: the
/// summary and counts for `status`, `STATUS=` and the metrics file, the listing for `list`, and
/// bulk operator actions in batches. Both stores implement it; what only one of them can do
/// (SQLite's `backup`, `restore` and file checks; PostgreSQL's nodes) stays on that store.
public protocol OperableOrderStore: OrderStore, CheckpointStore, SerializedStore {
    /// Where the store is, as logs and messages name it: the SQLite path, or the PostgreSQL
    /// URI without its password.
    var location: String { get }

    /// Counts by state, the oldest pending order and the next due time, in one snapshot.
    func summary() throws -> StoreSummary

    /// Counts of the orders in `states` only (the `STATUS=` line).
    func countsByState(in states: [OrderState]) throws -> [OrderState: Int]

    /// Orders matching `filter`, soonest next attempt first, and how many match in all.
    func list(_ filter: OrderFilter) throws -> (orders: [StoredOrder], total: Int)

    /// Only the ids of the orders matching `filter` (up to its limit), in the order they were
    /// taken in: what a bulk verb acts on, without reading receipts (`hold --state …` over a
    /// million orders), and what completion offers.
    func orderIDs(_ filter: OrderFilter) throws -> [String]

    /// The orders not finished, cancelled or revoked, counted by `grouping` and age at `now`
    /// (`reconcilectl shape`). By endpoint: `delivery` for verified orders, `googleplay` for
    /// Google Play ones, `verifierEndpoint` (the configured verifier's first) for the rest.
    func shape(by grouping: QueueShape.Grouping, now: Date, verifierEndpoint: String) throws -> QueueShape

    /// Applies an operator action in batches of `batchSize` orders, one transaction each (see
    /// ``RelationalOrderStore/applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)``).
    func applyInBatches(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: () -> Date, batchSize: Int, sampleSize: Int,
        shouldStop: () -> Bool, each: (OperatorOutcome) -> Void
    ) throws -> BulkOutcome

    /// Closes the store; it cannot be used afterwards.
    func close()
}

extension OperableOrderStore {
    /// ``applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)`` with its
    /// defaults: batches of 1,000, 100 examples of each kind.
    public func applyInBatches(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, now: () -> Date = Date.init,
        shouldStop: () -> Bool = { false }, each: (OperatorOutcome) -> Void = { _ in }
    ) throws -> BulkOutcome {
        try applyInBatches(
            request, verifiers: verifiers, now: now, batchSize: OperatorBatch.size, sampleSize: 100, shouldStop: shouldStop, each: each)
    }

    /// ``applyInBatches(_:verifiers:now:batchSize:sampleSize:shouldStop:each:)`` with `[Verifier]
    /// Kind=kind` only.
    public func applyInBatches(
        _ request: OperatorRequest, verifierKind: VerifierKind?, now: () -> Date = Date.init, batchSize: Int = OperatorBatch.size,
        sampleSize: Int = 100, shouldStop: () -> Bool = { false }, each: (OperatorOutcome) -> Void = { _ in }
    ) throws -> BulkOutcome {
        try applyInBatches(
            request, verifiers: verifierKind.map { ConfiguredVerifiers(kind: $0) }, now: now, batchSize: batchSize, sampleSize: sampleSize,
            shouldStop: shouldStop, each: each)
    }
}
