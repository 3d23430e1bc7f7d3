import Foundation
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// The shared store's coordination (DESIGN §7): leases released per node at start, expired
/// leases rescued by any node — never over a completion that won the race (River #1302) —,
/// late completions refused, lease renewal, heartbeats and the live-node count.
@Suite("PostgreSQL nodes and leases", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLOrderStoreNodesTests {
    func request() -> AttemptRecord {
        AttemptRecord(endpoint: .production, environment: "Production", httpStatus: 200, verifierStatus: 0, latency: .milliseconds(5), outcome: .answered, startedAt: t0)
    }

    func finishing(_ order: ClaimedOrder) -> AttemptCompletion {
        AttemptCompletion(
            order: order, records: [request()], resolution: .verified(Grant(transactionID: "T-\(order.orderID)"), finishes: true, finishedBy: .merchant),
            charged: true)
    }

    func claim(_ store: PostgreSQLOrderStore, limit: Int = 100) throws -> [ClaimedOrder] {
        try store.claimDue(.verify, now: t0 + 1, limit: limit, owner: store.leaseOwner, leaseUntil: t0 + 121, charge: true)
    }

    /// Ends the leases of `orderIDs` a second ago, on the database's clock.
    func expire(_ orderIDs: [String], on database: PostgreSQLTestDatabase) throws {
        try database.connect().run(
            "UPDATE orders SET leased_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE order_id = ANY($1::text[])",
            [.textArray(orderIDs)])
    }

    @Test("a second daemon under one node name finds the first, by its host, when it heart-beats again; a crashed or stopped one it does not")
    func namesake() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let report = NodeReport(inFlight: 0, circuits: [:], startedAt: Date(), version: "test")
        let interval = Duration.milliseconds(500)
        func open(host: String, processID: Int32 = getpid()) throws -> PostgreSQLOrderStore {
            try PostgreSQLOrderStore(options: database.options, node: "node-x", host: host, processID: processID)
        }
        let first = try open(host: "host-a")
        _ = try first.heartbeat(report, liveWithin: .seconds(5))
        #expect(PostgreSQLNodeNamesake.origin(ofLeaseOwner: first.leaseOwner)?.host == "host-a")

        // The first is alive: it heart-beats while the second waits.
        let second = try open(host: "host-b")
        var waited: [Duration] = []
        let live = try second.liveNamesake(heartbeatInterval: interval) { duration in
            waited.append(duration)
            _ = try? first.heartbeat(report, liveWithin: .seconds(5))
        }
        let found = try #require(live)
        #expect(found.host == "host-a" && found.processID == getpid())
        #expect(waited.count == 1 && waited[0] <= .seconds(2))
        #expect(found.description.hasPrefix("another reconciled runs as node node-x on host host-a (process \(getpid())): its last heartbeat was "), "\(found)")
        #expect(found.description.hasSuffix(" s ago, and it heart-beat again since; give each daemon its own [Daemon] Node="), "\(found)")

        // The first crashed on its host: no heartbeat comes.
        #expect(try second.liveNamesake(heartbeatInterval: interval) { _ in } == nil)

        // A crashed earlier start on this host (its process gone): at once, no wait.
        let crashed = try open(host: "host-c", processID: Int32.max)
        _ = try crashed.heartbeat(report, liveWithin: .seconds(5))
        let restarted = try open(host: "host-c")
        #expect(try restarted.liveNamesake(heartbeatInterval: interval) { _ in Issue.record("waited for a crashed start of this host") } == nil)

        // Stopped cleanly, or long silent: not running.
        _ = try first.heartbeat(report, liveWithin: .seconds(5))
        try first.leave()
        #expect(try second.liveNamesake(heartbeatInterval: interval) { _ in Issue.record("waited for a stopped node") } == nil)
        _ = try first.heartbeat(report, liveWithin: .seconds(5))
        try database.connect().run("UPDATE nodes SET last_heartbeat = last_heartbeat - 60000 WHERE name = 'node-x'")
        #expect(try second.liveNamesake(heartbeatInterval: interval) { _ in Issue.record("waited for a silent node") } == nil)
    }

    @Test("a start releases its own node's earlier leases only; another node's stay")
    func releasePerNode() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let a = try database.openStore(node: "host-a")
        let b = try database.openStore(node: "host-b")
        _ = try a.ingest([candidate("A1"), candidate("B1")], verifierKind: .apple, now: t0)
        _ = try a.claimDue(.verify, now: t0 + 1, limit: 1, owner: a.leaseOwner, leaseUntil: t0 + 121, charge: true)
        _ = try claim(b)
        // host-a starts again: a new lease owner, the same node.
        let restarted = try database.openStore(node: "host-a")
        #expect(restarted.leaseOwner != a.leaseOwner && restarted.leaseOwner.hasPrefix("host-a/"))
        #expect(try restarted.releaseLeases(now: t0 + 2) == ["A1"])
        #expect(try restarted.order(id: "A1")?.state == .pending)
        #expect(try restarted.order(id: "B1")?.state == .verifying && restarted.order(id: "B1")?.leaseOwner == b.leaseOwner)
        #expect(try restarted.history(orderID: "A1").last?.reason == "lease_released")
    }

    @Test("an expired lease is rescued by another node: due again, the attempt counted, the same order (key) kept")
    func rescue() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let dead = try database.openStore(node: "dead")
        let rescuer = try database.openStore(node: "alive")
        _ = try dead.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        let leased = try claim(dead)
        #expect(leased.count == 2)
        try expire(["A1"], on: database)
        let rescued = try rescuer.rescueExpiredLeases(limit: 100)
        #expect(rescued.map(\.orderID) == ["A1"] && rescued.first?.owner == dead.leaseOwner)
        let order = try #require(try rescuer.order(id: "A1"))
        #expect(order.state == .pending && order.leaseOwner == nil && order.attempts == 1 && order.nextAttemptAt != nil)
        #expect(try rescuer.history(orderID: "A1").last?.reason == "lease_expired")
        #expect(try rescuer.order(id: "A2")?.state == .verifying)
        #expect(try rescuer.rescueExpiredLeases(limit: 100).isEmpty)
        // The dead node's late outcome writes nothing; the order is claimed again as the next
        // attempt of the same order, whose Idempotency-Key is its order id.
        let late = try dead.complete([finishing(leased.first { $0.orderID == "A1" }!)], owner: dead.leaseOwner, now: t0 + 5)
        #expect(late.map(\.applied) == [false] && late.first?.reason.code == ReasonCode.leaseLost)
        #expect(try rescuer.order(id: "A1")?.state == .pending)
        let again = try #require(try rescuer.claimDue(.verify, now: Date(), limit: 1, owner: rescuer.leaseOwner, leaseUntil: Date() + 120, charge: true).first)
        #expect(again.orderID == "A1" && again.attempt == 2)
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM claims") == 0)
    }

    @Test("an outcome that comes after its lease ended is refused, even before any rescue, and logged as lease_lost")
    func lateCompletion() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore(node: "slow")
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        try expire(["A1"], on: database)
        let result = try store.complete([finishing(order)], owner: store.leaseOwner, now: t0 + 2)
        #expect(result.map(\.applied) == [false])
        #expect(try store.order(id: "A1")?.state == .verifying)
        #expect(try database.connect().scalar("SELECT count(*) FROM claims") == 0)
    }

    /// River #1302: a rescuer that read a row before a completion committed must not write its
    /// stale view over the completed row. Here the completion holds the row's lock (its
    /// transaction has finished the order but not committed) while the rescue runs: the rescue
    /// must leave the row alone, and after the commit the order stays finished.
    @Test("River #1302: a rescue racing a completion never overwrites the completed order")
    func rescueNeverOverwritesACompletion() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let node = try database.openStore(node: "completing")
        let rescuer = try database.openStore(node: "rescuing")
        _ = try node.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        _ = try claim(node)
        try expire(["A1"], on: database)
        // The completion, half done: the row locked and finished, not yet committed.
        let completing = try database.connect()
        try completing.execute("BEGIN")
        try completing.run("SELECT id FROM orders WHERE order_id = 'A1' FOR UPDATE")
        try completing.run(
            "UPDATE orders SET state = 'finished', lease_owner = NULL, leased_until = NULL, next_attempt_at = NULL, finished_by = 'merchant' WHERE order_id = 'A1'")
        let rescued = Mutex<[RescuedLease]?>(nil)
        let rescue = Thread { rescued.withLock { $0 = try? rescuer.rescueExpiredLeases(limit: 100) } }
        rescue.start()
        // The rescue runs while the completion's transaction is open: it skips the locked row
        // (or, were it to wait for it, is seen waiting) before the completion commits.
        let observer = try database.connect()
        let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        #expect(await eventually(timeout: .seconds(10), every: .milliseconds(5)) {
            rescued.withLock { $0 } != nil || ((try? observer.scalar(waiting)) ?? 0) >= 1
        }, "the rescue never ran")
        try completing.execute("COMMIT")
        _ = await eventually(timeout: .seconds(5), every: .milliseconds(50)) { rescued.withLock { $0 } != nil }
        #expect(rescued.withLock { $0 }?.isEmpty == true)
        let order = try #require(try rescuer.order(id: "A1"))
        #expect(order.state == .finished && order.leaseOwner == nil && order.nextAttemptAt == nil)
        #expect(try rescuer.history(orderID: "A1").allSatisfy { $0.reason != "lease_expired" })
        // And the same race many times over, through the stores' own calls on two threads.
        for round in 0..<40 {
            let id = "R\(round)"
            _ = try node.ingest([candidate(id)], verifierKind: .apple, now: t0)
            let order = try #require(try claim(node).first { $0.orderID == id })
            try database.connect().run(
                "UPDATE orders SET leased_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 5 WHERE order_id = $1", [.text(id)])
            // The lease ends on the database's clock about when the two start, the rescue
            // 0–10 ms later than the completion.
            let outcomes = try await StartingGate.race(2) { side -> Bool in
                if side == 0 { return try node.complete([finishing(order)], owner: node.leaseOwner, now: t0 + 3).first?.applied ?? false }
                usleep(UInt32.random(in: 0...10_000))  // real sleep: a random moment of the race
                return try rescuer.rescueExpiredLeases(limit: 10).contains { $0.orderID == id }
            }
            let stored = try #require(try rescuer.order(id: id))
            // Never both; the row says which won (neither: a completion after the lease ended,
            // a rescue before it ended — the order waits, leased, for the next rescue).
            #expect(!(outcomes[0] && outcomes[1]), "round \(round): both the completion and the rescue applied")
            let expected: OrderState = outcomes[0] ? .finished : outcomes[1] ? .pending : .verifying
            #expect(stored.state == expected, "round \(round): \(stored.state), expected \(expected)")
        }
    }

    @Test("renewal extends this start's live leases only")
    func renewal() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let a = try database.openStore(node: "a")
        let b = try database.openStore(node: "b")
        _ = try a.ingest([candidate("A1"), candidate("A2"), candidate("B1")], verifierKind: .apple, now: t0)
        let mine = try a.claimDue(.verify, now: t0 + 1, limit: 2, owner: a.leaseOwner, leaseUntil: t0 + 121, charge: true)
        let theirs = try claim(b)
        try expire(["A2"], on: database)
        let before = try #require(try a.order(id: "A1")?.leasedUntil)
        let renewed = try a.renewLeases(mine.map(\.reference) + theirs.map(\.reference), length: .seconds(600))
        #expect(renewed == [try #require(mine.first { $0.orderID == "A1" }).reference])
        let after = try #require(try a.order(id: "A1")?.leasedUntil)
        #expect(after.timeIntervalSince(before) > 400)
        #expect(try a.order(id: "A2")?.leasedUntil.map { $0 < Date() } == true)
        #expect(try a.order(id: "B1")?.leaseOwner == b.leaseOwner)
    }

    @Test("heartbeats: live nodes counted within the window, a stopped or silent node is not, a node's first heartbeat says it was not live")
    func heartbeats() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let a = try database.openStore(node: "a")
        let b = try database.openStore(node: "b")
        let report = NodeReport(inFlight: 3, circuits: ["merchant": "closed"], startedAt: Date(), version: "test")
        let first = try a.heartbeat(report, liveWithin: .seconds(10))
        #expect(first.liveNodes == 1 && !first.wasLive)
        #expect(try b.heartbeat(report, liveWithin: .seconds(10)).liveNodes == 2)
        let second = try a.heartbeat(report, liveWithin: .seconds(10))
        #expect(second.liveNodes == 2 && second.wasLive)
        // b falls silent: counted out once its heartbeat is older than the window.
        try database.connect().run("UPDATE nodes SET last_heartbeat = last_heartbeat - 11000 WHERE name = 'b'")
        #expect(try a.heartbeat(report, liveWithin: .seconds(10)).liveNodes == 1)
        #expect(try b.heartbeat(report, liveWithin: .seconds(10)).wasLive == false)
        try b.leave()
        #expect(try a.heartbeat(report, liveWithin: .seconds(10)).liveNodes == 1)
        let nodes = try a.nodes(liveWithin: .seconds(10))
        #expect(nodes.map(\.name).sorted() == ["a", "b"])
        #expect(nodes.first { $0.name == "a" }?.live == true && nodes.first { $0.name == "b" }?.live == false)
        #expect(nodes.first { $0.name == "a" }?.circuits == ["merchant": "closed"] && nodes.first { $0.name == "a" }?.inFlight == 3)
        // Another node's lease is what the next rescue waits for.
        _ = try a.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        _ = try claim(b)
        #expect(try a.heartbeat(report, liveWithin: .seconds(10)).nextForeignLeaseEnd != nil)
        #expect(try b.heartbeat(report, liveWithin: .seconds(10)).nextForeignLeaseEnd == nil)
    }

    @Test("NOTIFY after ingest reaches a listener on another connection")
    func wakeUps() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        let woken = Atomic<Int>(0)
        let listener = PostgreSQLListener(options: database.options, onNotify: { woken.add(1, ordering: .relaxed) })
        listener.start()
        defer { listener.stop() }
        // A NOTIFY sent before the LISTEN is lost: wait until the listener's connection has asked.
        let observer = try database.connect()
        #expect(await eventually {
            (try? observer.scalar("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'")) == 1
        }, "the listener never sent LISTEN")
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        // One wake-up: the ingest's transaction sends one NOTIFY, however many orders it holds.
        #expect(await eventually { woken.load(ordering: .relaxed) >= 1 }, "no wake-up after the ingest")
        // Counted before the NOTIFY: its wake-up may arrive before notifyNodes() returns.
        let before = woken.load(ordering: .relaxed)
        #expect(before == 1, "\(before) wake-ups for one ingest")
        try store.notifyNodes()
        #expect(await eventually { woken.load(ordering: .relaxed) > before }, "no wake-up after notifyNodes()")
    }
}
