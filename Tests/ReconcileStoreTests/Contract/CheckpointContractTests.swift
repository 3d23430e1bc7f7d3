import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
import ReconcileFoundation

/// Polling checkpoints as every store keeps them (DESIGN §5a): absent until written, read back
/// to the millisecond, per name, never moved back. Runs against each store in ``ContractStore/all``.
@Suite("Store contract: checkpoints", .postgreSQLTurn)
struct CheckpointContractTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("absent until written; read back to the millisecond; one per name; never moved back", arguments: ContractStore.all)
    func checkpoints(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = try #require(opened.store as? any CheckpointStore)
        #expect(try store.checkpoint("appstore.production") == nil)
        let first = Self.t0.addingTimeInterval(0.123)
        try store.advanceCheckpoint("appstore.production", to: first, now: Self.t0)
        #expect(try store.checkpoint("appstore.production")?.epochMilliseconds == first.epochMilliseconds)
        #expect(try store.checkpoint("appstore.sandbox") == nil, "each name has its own")
        try store.advanceCheckpoint("appstore.sandbox", to: Self.t0 + 60, now: Self.t0)
        try store.advanceCheckpoint("appstore.production", to: Self.t0 + 3600, now: Self.t0 + 1)
        #expect(try store.checkpoint("appstore.production") == Self.t0 + 3600)
        // A poll that finishes after a later one (another node) leaves the later checkpoint.
        try store.advanceCheckpoint("appstore.production", to: Self.t0 + 10, now: Self.t0 + 2)
        #expect(try store.checkpoint("appstore.production") == Self.t0 + 3600)
        #expect(try store.checkpoint("appstore.sandbox") == Self.t0 + 60)
    }

    @Test("a turn is taken by one caller until it ends; then by the next that asks", arguments: ContractStore.all)
    func turns(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = try #require(opened.store as? any CheckpointStore)
        #expect(try store.takeTurn("appstore.production.turn", until: Self.t0 + 3000, now: Self.t0))
        #expect(try !store.takeTurn("appstore.production.turn", until: Self.t0 + 3100, now: Self.t0 + 100), "held by the first")
        #expect(try store.takeTurn("appstore.sandbox.turn", until: Self.t0 + 3100, now: Self.t0 + 100), "each name has its own")
        #expect(try store.takeTurn("appstore.production.turn", until: Self.t0 + 6000, now: Self.t0 + 3000), "ended: the next one takes it")
        #expect(try !store.takeTurn("appstore.production.turn", until: Self.t0 + 6100, now: Self.t0 + 5999))
        #expect(try store.checkpoint("appstore.production") == nil, "turns are not checkpoints")
    }
}
