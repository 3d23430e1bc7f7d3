import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL
import Testing
import TestSupport
@testable import ReconcileEngine

/// The scheduler on a shared PostgreSQL store (DESIGN §7), turn by turn with a clock the test
/// moves: what it does with work whose lease it lost. The server's start and the database's
/// creation block for a while: off Swift's cooperative pool (``offPool``), which the other
/// suites' timing tests need.
@Suite("Scheduler on a shared store", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"))
struct SchedulerClusterTests {
    let clock = ManualClock()

    /// A fresh database on the tests' server; its URI (the unix socket: no password).
    static func database() throws -> String {
        let server = try PostgreSQLTestServer.shared()
        let name = "cluster_\(UInt32.random(in: 0 ... .max))"
        // A name of our own making: CREATE DATABASE takes no parameters.
        try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres"))).execute("CREATE DATABASE \(name)")
        return server.socketURI(database: name)
    }

    func candidate(_ orderID: String) throws -> IngestCandidate {
        let text = OrderFixtures.orderJSON(orderID)
        return IngestCandidate(submission: try OrderFileParser().parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: orderID, fileName: orderID)
    }

    /// `MaxInFlight=1`, `LeaseTime=60s` (a heartbeat every 5 s), no delivery URL.
    func settings() -> Scheduler.Settings {
        var retry = Configuration.RetrySettings()
        retry.jitter = .none
        var settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(retry), deliveryConfigured: false),
            maxInFlight: 1, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(10), circuitMaxCooldown: .seconds(60),
            requestTimeout: .seconds(2))
        settings.leaseTime = .seconds(60)
        return settings
    }

    @Test("a node without a delivery URL leaves verified orders to the nodes that have one; a step of its wall clock moves no due time")
    func configurationAndClockStayLocal() async throws {
        let uri = try await offPool { try Self.database() }
        let store = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "a")
        defer { store.close() }
        let start = Date()
        _ = try store.ingest([try candidate("V1"), try candidate("P1")], verifierKind: .http, now: start.addingTimeInterval(-60))
        let leased = try store.claimDue(.verify, now: start, limit: 10, owner: store.leaseOwner, leaseUntil: start.addingTimeInterval(60), charge: true)
        let v1 = try #require(leased.first { $0.orderID == "V1" })
        let p1 = try #require(leased.first { $0.orderID == "P1" })
        let record = AttemptRecord(endpoint: .merchant, httpStatus: 200, latency: .milliseconds(5), outcome: .answered, startedAt: start)
        // V1 verified, its delivery due in 10 s; P1 failed, due again in two hours.
        _ = try store.complete([
            AttemptCompletion(order: v1, records: [record], resolution: .verified(Grant(transactionID: "T1"), finishes: false, finishedBy: .verifier), charged: true),
            AttemptCompletion(order: p1, records: [record], resolution: .retry(at: start.addingTimeInterval(7200), reason: Reason(.http(503))), charged: true),
        ], owner: store.leaseOwner, now: start)
        try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: uri)).execute(
            "UPDATE orders SET next_attempt_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 10000 WHERE order_id = 'V1'")
        let dueBefore = try #require(try store.order(id: "P1")?.nextAttemptAt)

        let verifier = SchedulerTurnTests.HeldVerifier()
        clock.stepWall(by: Date().timeIntervalSince(clock.now()))  // this host's clock right, to begin with
        let scheduler = Scheduler(store: store, settings: settings(), senders: Scheduler.Senders(verifier: verifier), logger: .discarding, clock: clock)
        await scheduler.finishUndeliverable()
        _ = await scheduler.turn()
        clock.stepWall(by: -3 * 3600)
        await scheduler.clockChanged()
        _ = await scheduler.turn()
        #expect(try store.order(id: "V1")?.state == .verified, "finished undelivered by a node without a delivery URL")
        #expect(try store.order(id: "P1")?.nextAttemptAt == dueBefore, "brought forward by one host's clock step")
        #expect(verifier.started.isEmpty)
    }

    @Test("an order leased ahead whose lease ended while the node was cut off, and which another node took, is not sent when the node comes back")
    func leasedAheadAndLost() async throws {
        let uri = try await offPool { try Self.database() }
        let a = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "a")
        let b = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: uri), node: "b")
        defer {
            a.close()
            b.close()
        }
        _ = try a.ingest([try candidate("O00"), try candidate("O01")], verifierKind: .http, now: Date().addingTimeInterval(-60))
        let verifier = SchedulerTurnTests.HeldVerifier()
        let scheduler = Scheduler(store: a, settings: settings(), senders: Scheduler.Senders(verifier: verifier), logger: .discarding, clock: clock)

        // One attempt in flight, one order leased ahead of the slot.
        _ = await scheduler.turn()
        _ = await eventually(every: .milliseconds(5)) { !verifier.started.isEmpty }
        #expect(verifier.started == ["O00"])
        #expect(try a.countsByState() == [.verifying: 2])

        // Cut off past LeaseTime: the lease of the order leased ahead ends, node b rescues and
        // claims it.
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: uri))
        _ = try connection.run(
            "UPDATE orders SET leased_until = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1000 WHERE order_id = 'O01'")
        #expect(try b.rescueExpiredLeases(limit: 10).map(\.orderID) == ["O01"])
        #expect(try b.claimDue(.verify, now: Date(), limit: 10, owner: b.leaseOwner, leaseUntil: Date().addingTimeInterval(60), charge: true)
            .map(\.orderID) == ["O01"])

        // Back: the next turn heart-beats and renews; the attempt in flight ends and frees the slot.
        clock.advance(by: .seconds(10))
        _ = await scheduler.turn()
        await verifier.finish("O00", .granted(Grant(transactionID: "T0"), finishedBy: .merchant), gate: scheduler)
        #expect(await eventually(every: .milliseconds(5)) { await scheduler.status().inFlight == 0 })
        _ = await scheduler.turn()
        #expect(verifier.started == ["O00"], "O01 is node b's now: sending it here would send it twice")
        #expect(try a.order(id: "O01")?.leaseOwner == b.leaseOwner)
        #expect(try a.order(id: "O00")?.state == .finished)
        await verifier.releaseAll(scheduler)
    }
}
