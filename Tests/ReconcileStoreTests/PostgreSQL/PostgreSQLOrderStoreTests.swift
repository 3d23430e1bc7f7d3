import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// What only the PostgreSQL store has: the partial due index in the planner's hands, leases on
/// the database's clock, SKIP LOCKED, reconnection, the raw file as bytes. (What every store owes
/// is in the contract suite; migrations are in PostgreSQLMigratorTests.)
@Suite("PostgreSQL store", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLOrderStoreTests {
    @Test("due-order selection is a range scan of the partial due index, whatever the backlog", arguments: WorkKind.allCases)
    func dueIndex(_ kind: WorkKind) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        // 20,000 finished orders and 50 due ones of each kind, with statistics.
        try database.connect().execute(
            """
            INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
            SELECT 'F' || n, 'gems', 'finished', 'h', n, n, NULL FROM generate_series(1, 20000) n;
            INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
            SELECT 'P' || n, 'gems', 'pending', 'h', n, n, n FROM generate_series(1, 50) n;
            INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
            SELECT 'V' || n, 'gems', 'verified', 'h', n, n, n FROM generate_series(1, 50) n;
            ANALYZE orders;
            """)
        let index = "orders_due_\(kind.rawValue)"
        for sql in [PostgreSQLOrderStore.dueOrdersSQL(kind), PostgreSQLOrderStore.nextDueSQL(kind)] {
            let parameters: [PostgreSQLValue] = sql.contains("$2") ? [.integer(25), .integer(10)] : []
            let plan = try store.queryPlan(sql, parameters).joined(separator: "\n")
            #expect(plan.contains("using \(index) on orders") && !plan.contains("Seq Scan") && !plan.contains("Sort"), "\(plan)")
        }
        // The generic plan (what a prepared statement settles on) uses it too.
        let connection = try database.connect()
        try connection.execute("SET plan_cache_mode = force_generic_plan")
        let generic = try connection.query("EXPLAIN " + PostgreSQLOrderStore.dueOrdersSQL(kind), [.integer(25), .integer(10)], format: .text) {
            $0.string(0)
        }.joined(separator: "\n")
        #expect(generic.contains("Index Scan using \(index) on orders"), "\(generic)")
    }

    @Test("a lease ends by the database's clock: now plus the length asked for, whatever the caller's now")
    func leaseOnDatabaseClock() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        let past = Date(timeIntervalSince1970: 1_000_000_000)  // 2001
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: past)
        let before = Date()
        let claimed = try store.claimDue(.verify, now: past, limit: 1, owner: "node-a", leaseUntil: past + 120, charge: true)
        #expect(claimed.map(\.orderID) == ["A1"])
        let leasedUntil = try #require(try store.order(id: "A1")?.leasedUntil)
        // The server runs on this machine: its clock is this one.
        #expect(leasedUntil >= before.addingTimeInterval(119) && leasedUntil <= Date().addingTimeInterval(121), "\(leasedUntil)")
        #expect(try store.order(id: "A1")?.updatedAt == past)
    }

    @Test("an order another transaction holds locked is skipped by a claim, which neither waits nor takes it")
    func skipLocked() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3")], verifierKind: .apple, now: t0)
        let other = try database.connect()
        try other.execute("BEGIN")
        _ = try other.query("SELECT id FROM orders WHERE order_id = 'A2' FOR UPDATE") { $0.int64(0) }
        let started = ContinuousClock.now
        let claimed = try store.claimDue(.verify, now: t0 + 1, limit: 10, owner: "node-a", leaseUntil: t0 + 121, charge: true)
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(Set(claimed.map(\.orderID)) == ["A1", "A3"])
        try other.execute("ROLLBACK")
        #expect(try store.claimDue(.verify, now: t0 + 1, limit: 10, owner: "node-b", leaseUntil: t0 + 121, charge: true).map(\.orderID) == ["A2"])
    }

    @Test("a store whose connection was cut reconnects on its next call")
    func reconnects() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let backend = try store.withConnection { $0.backendPID }
        _ = try database.connect().scalar("SELECT count(*) FROM (SELECT pg_terminate_backend($1)) t", [.integer(Int64(backend))])
        #expect(try store.order(id: "A1")?.state == .pending)
        _ = try database.connect().scalar("SELECT count(*) FROM (SELECT pg_terminate_backend($1)) t", [.integer(Int64(try store.withConnection { $0.backendPID }))])
        #expect(try store.ingest([candidate("A2")], verifierKind: .apple, now: t0) == [.accepted(.pending)])
        #expect(try store.countsByState() == [.pending: 2])
    }

    @Test("the raw spool file is kept as bytes; pruning drops it")
    func rawFile() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        let file = candidate("A1", extra: "\"note\":\"ünknown key\"")
        _ = try store.ingest([file], verifierKind: .apple, now: t0)
        let connection = try database.connect()
        #expect(try connection.queryFirst("SELECT p.raw FROM order_proofs p JOIN orders o ON o.id = p.order_ref WHERE o.order_id = 'A1'") { $0.bytes(0) } == file.raw)
        let order = try #require(try store.claimDue(.verify, now: t0, limit: 1, owner: "n", leaseUntil: t0 + 60, charge: true).first)
        _ = try store.complete(
            [AttemptCompletion(order: order, records: [], resolution: .verified(Grant(transactionID: "T1"), finishes: true, finishedBy: .merchant), charged: true)],
            owner: "n", now: t0 + 1)
        #expect(try store.pruneFinished(before: t0 + 10, now: t0 + 20) == 1)
        #expect(try connection.queryFirst("SELECT p.raw IS NULL AND p.receipt IS NULL FROM order_proofs p JOIN orders o ON o.id = p.order_ref WHERE o.order_id = 'A1'") { $0.bool(0) } == true)
    }
}
