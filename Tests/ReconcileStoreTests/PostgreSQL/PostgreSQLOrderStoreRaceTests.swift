import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// Several ``PostgreSQLOrderStore`` instances — separate connections, different owners, as
/// several daemons would be — racing on one database from threads of their own: no order leased
/// twice, no transaction claimed by two orders, no operator action applied twice, no order stored
/// twice.
@Suite("PostgreSQL stores racing", .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"), .postgreSQLTurn)
struct PostgreSQLOrderStoreRaceTests {
    static let nodeCounts = [2, 3]

    func stores(_ count: Int, on database: PostgreSQLTestDatabase) throws -> [PostgreSQLOrderStore] {
        try (0..<count).map { _ in try database.openStore() }
    }

    func owner(_ node: Int) -> String { "node-\(node):\(node + 100):x" }

    func request() -> AttemptRecord {
        AttemptRecord(endpoint: .production, environment: "Production", httpStatus: 200, verifierStatus: 0, latency: .milliseconds(5), outcome: .answered, startedAt: t0)
    }

    func isApplied(_ outcome: OperatorOutcome) -> Bool {
        if case .applied = outcome.result { true } else { false }
    }

    @Test("stores leasing the same due orders at once lease each exactly once", arguments: nodeCounts)
    func claims(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let count = 150
        _ = try stores[0].ingest((0..<count).map { candidate("A\($0)") }, verifierKind: .apple, now: t0)
        let perNode = try await StartingGate.race(nodes) { node in
            var leased: [String] = []
            var applied = 0
            while true {
                let batch = try stores[node].claimDue(.verify, now: t0 + 1, limit: 4, owner: owner(node), leaseUntil: t0 + 121, charge: true)
                if batch.isEmpty { return (leased, applied) }
                leased += batch.map(\.orderID)
                let results = try stores[node].complete(
                    batch.map {
                        AttemptCompletion(order: $0, records: [request()], resolution: .verified(Grant(transactionID: "T-\($0.orderID)"), finishes: true, finishedBy: .merchant), charged: true)
                    }, owner: owner(node), now: t0 + 2)
                applied += results.filter(\.applied).count
            }
        }
        let leased = perNode.flatMap(\.0)
        #expect(leased.count == count && Set(leased).count == count, "leased \(leased.count), distinct \(Set(leased).count)")
        #expect(perNode.map(\.1).reduce(0, +) == count)
        #expect(try stores[0].countsByState() == [.finished: count])
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM transitions WHERE reason = 'attempt'") == Int64(count))
        #expect(try connection.scalar("SELECT max(attempts) FROM orders") == 1)
        print("claims race, \(nodes) stores: leased per store \(perNode.map(\.0.count))")
    }

    @Test("orders of one purchase completed on different stores at once: exactly one is granted, the others name it", arguments: nodeCounts)
    func transactionClaims(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let groups = 25
        // G<g>-N<n>: a purchase g, ordered once for each node n, due at t0 + n so that node n
        // leases exactly its own.
        for node in 0..<nodes {
            _ = try stores[node].ingest((0..<groups).map { candidate("G\($0)-N\(node)") }, verifierKind: .apple, now: t0 + Double(node))
        }
        var leased: [[ClaimedOrder]] = []
        for node in 0..<nodes {
            leased.append(try stores[node].claimDue(.verify, now: t0 + Double(node), limit: groups, owner: owner(node), leaseUntil: t0 + 120, charge: true))
            #expect(leased[node].count == groups && leased[node].allSatisfy { $0.orderID.hasSuffix("-N\(node)") })
        }
        let frozen = leased
        let results = try await StartingGate.race(nodes) { node in
            try frozen[node].shuffled().map { order in
                let purchase = "T-" + order.orderID.split(separator: "-")[0]
                let item = AppleReceiptItem(productID: "gems", transactionID: purchase, originalTransactionID: purchase, purchaseDateMilliseconds: 1)
                return try stores[node].complete(
                    [AttemptCompletion(order: order, records: [request()], resolution: .match(items: [item], environment: "Production", finishes: true), charged: true)],
                    owner: owner(node), now: t0 + 10)[0]
            }
        }.flatMap { $0 }
        #expect(results.count == groups * nodes && results.allSatisfy(\.applied))
        let connection = try database.connect()
        for group in 0..<groups {
            let members = results.filter { $0.orderID.hasPrefix("G\(group)-") }
            let winners = members.filter { $0.to == .finished }
            guard winners.count == 1, let winner = winners.first else {
                Issue.record("purchase \(group): \(winners.count) orders granted")
                continue
            }
            for loser in members where loser.orderID != winner.orderID {
                #expect(loser.to == .escalated && loser.reason.code == .duplicateTransaction)
                #expect(loser.reason.detail == "transaction T-G\(group) is claimed by order \(winner.orderID)")
            }
            let holder = try connection.queryFirst(
                "SELECT o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = $1", [.text("T-G\(group)")]
            ) { $0.string(0) }
            #expect(holder == winner.orderID)
        }
        #expect(try connection.scalar("SELECT count(*) FROM claims") == Int64(groups))
        #expect(try connection.scalar("SELECT count(*) FROM orders WHERE state = 'finished'") == Int64(groups))
    }

    @Test("a claim another transaction is taking: the completion waits for it, then sees the winner and escalates naming it")
    func claimInFlight() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        _ = try store.ingest([candidate("A1"), candidate("B1"), candidate("A2"), candidate("B2")], verifierKind: .apple, now: t0)
        let orders = Dictionary(uniqueKeysWithValues: try store.claimDue(.verify, now: t0, limit: 4, owner: "n", leaseUntil: t0 + 60, charge: true).map { ($0.orderID, $0) })
        let items = { (purchase: String) in [AppleReceiptItem(productID: "gems", transactionID: purchase, originalTransactionID: purchase, purchaseDateMilliseconds: 1)] }

        for (orderID, rival, commits) in [("A1", "B1", true), ("A2", "B2", false)] {
            let purchase = "T-\(orderID)"
            // Another node's transaction has claimed the purchase for `rival` and not committed yet.
            let other = try database.connect()
            try other.execute("BEGIN")
            try other.run(
                "INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) SELECT $1, id, 0, 'daemon' FROM orders WHERE order_id = $2",
                [.text(purchase), .text(rival)])
            let order = try #require(orders[orderID])
            let matched = items(purchase)
            let completion = Task {
                try await offPool {
                    try store.complete(
                        [AttemptCompletion(order: order, records: [], resolution: .match(items: matched, environment: nil, finishes: true), charged: true)],
                        owner: "n", now: t0 + 1)[0]
                }
            }
            #expect(try await database.someoneWaitsForALock(), "the completion never waited for the rival's claim")
            try other.execute(commits ? "COMMIT" : "ROLLBACK")
            let result = try await completion.value
            if commits {
                #expect(result.to == .escalated && result.reason.detail == "transaction \(purchase) is claimed by order \(rival)", "\(result)")
            } else {
                #expect(result.to == .finished && result.transactionID == purchase, "\(result)")
            }
        }
        let connection = try database.connect()
        #expect(try connection.query("SELECT c.transaction_id || '=' || o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref ORDER BY 1") {
            $0.string(0)
        } == ["T-A1=B1", "T-A2=A2"])
    }

    @Test("operator verbs asked of every store at once apply once per order", arguments: nodeCounts)
    func operatorVerbs(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let ids = (0..<30).map { "E\($0)" }
        _ = try stores[0].ingest(ids.map { candidate($0) }, verifierKind: .apple, now: t0)
        let leased = try stores[0].claimDue(.verify, now: t0, limit: ids.count, owner: owner(0), leaseUntil: t0 + 60, charge: true)
        _ = try stores[0].complete(
            leased.map { AttemptCompletion(order: $0, records: [], resolution: .escalate(Reason(.noMatchingPurchase)), charged: true) }, owner: owner(0), now: t0 + 1)
        #expect(try stores[0].countsByState() == [.escalated: ids.count])

        let retried = try await StartingGate.race(nodes) { node in
            try stores[node].apply(
                OperatorRequest(action: .retry, target: .state(.escalated), actor: .operator("op\(node)")), verifierKind: .apple, now: t0 + 20)
        }.flatMap { $0 }
        let retriedOrders = retried.filter(isApplied).map(\.orderID)
        #expect(retriedOrders.count == ids.count && Set(retriedOrders) == Set(ids), "\(retried.count) outcomes")

        let cancelled = try await StartingGate.race(nodes) { node in
            try stores[node].apply(
                OperatorRequest(action: .cancel, target: .orders(node % 2 == 0 ? ids : ids.reversed()), actor: .operator("op\(node)"), note: "fraud"),
                verifierKind: .apple, now: t0 + 30)
        }.flatMap { $0 }
        #expect(cancelled.count == ids.count * nodes)
        for id in ids {
            let outcomes = cancelled.filter { $0.orderID == id }
            #expect(outcomes.filter(isApplied).count == 1, "\(id): \(outcomes)")
        }
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM transitions WHERE reason = 'retry'") == Int64(ids.count))
        #expect(try connection.scalar("SELECT count(*) FROM transitions WHERE reason = 'cancel'") == Int64(ids.count))
        #expect(try stores[nodes - 1].countsByState() == [.cancelled: ids.count])
    }

    @Test("an action on an order in flight asked of every store at once: one waits for the attempt, the others are refused", arguments: nodeCounts)
    func deferredAction(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        _ = try stores[0].ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try stores[0].claimDue(.verify, now: t0, limit: 1, owner: owner(0), leaseUntil: t0 + 60, charge: true).first)
        let outcomes = try await StartingGate.race(nodes) { node in
            try stores[node].apply(OperatorRequest(action: .hold, target: .orders(["A1"]), actor: .operator("op\(node)")), verifierKind: .apple, now: t0 + 1)[0]
        }
        #expect(outcomes.filter { $0.result == .deferred(state: .verifying) }.count == 1, "\(outcomes)")
        for outcome in outcomes where outcome.result != .deferred(state: .verifying) {
            guard case .refused(let why) = outcome.result else { Issue.record("\(outcome)"); continue }
            #expect(why.contains("an earlier hold by operator:op"))
        }
        let result = try stores[0].complete(
            [AttemptCompletion(order: order, records: [], resolution: .retry(at: t0 + 60, reason: Reason(.http(503))), charged: true)], owner: owner(0), now: t0 + 2)[0]
        #expect(result.to == .held && result.appliedAction == .hold)
        #expect(try stores[nodes - 1].history(orderID: "A1").filter { $0.reason == "hold_requested" }.count == 1)
    }

    @Test("resolve with one purchase, asked for different orders on every store at once: one order gets it", arguments: nodeCounts)
    func resolveRace(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let ids = (0..<nodes).map { "R\($0)" }
        _ = try stores[0].ingest(ids.map { candidate($0) }, verifierKind: .apple, now: t0)
        let outcomes = try await StartingGate.race(nodes) { node in
            try stores[node].apply(
                OperatorRequest(action: .resolve, target: .orders([ids[node]]), actor: .operator("op\(node)"), note: "paid", transactionID: "T-SHARED"),
                verifierKind: .apple, now: t0 + 5)[0]
        }
        let winners = outcomes.filter(isApplied)
        #expect(winners.count == 1, "\(outcomes)")
        if let winner = winners.first {
            for outcome in outcomes where outcome.orderID != winner.orderID {
                #expect(outcome.result == .refused("transaction T-SHARED is already claimed by order \(winner.orderID)"))
            }
        }
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM claims") == 1)
        #expect(try connection.scalar("SELECT count(*) FROM orders WHERE state = 'finished'") == 1)
    }

    @Test("the same spool files taken in by every store at once (in opposite orders): each order stored once", arguments: nodeCounts)
    func ingestRace(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let files = (0..<40).map { candidate("I\($0)") }
        let outcomes = try await StartingGate.race(nodes) { node in
            let batch = node % 2 == 0 ? files : files.reversed()
            return Array(zip(batch.map(\.submission.orderID), try stores[node].ingest(batch, verifierKind: .apple, now: t0)))
        }.flatMap { $0 }
        for file in files {
            let mine = outcomes.filter { $0.0 == file.submission.orderID }.map(\.1)
            #expect(mine.filter { $0 == .accepted(.pending) }.count == 1 && mine.filter { $0 == .unchanged }.count == nodes - 1, "\(mine)")
        }
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM orders") == Int64(files.count))
        #expect(try connection.scalar("SELECT count(*) FROM transitions WHERE reason = 'ingested'") == Int64(files.count))
    }

    @Test("the same purchases reported to every store at once, then settled by every store at once: each kept once, exactly one order made per purchase", arguments: nodeCounts)
    func discoveryRace(_ nodes: Int) async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let stores = try stores(nodes, on: database)
        let deliver = DiscoverySettings(mode: .deliver, grace: .seconds(60))
        let purchases = (0..<60).map { index in
            DiscoveredPurchase(
                store: .appStore, transactionKey: String(9_000_000 + index), productID: "gems", accountToken: "acct-\(index)",
                proof: OrderProof(transactionID: String(9_000_000 + index), signedTransaction: "eyJ.e30.c2ln"), via: .history)
        }
        // Reported by every node (each polls the history; files may come to any of them).
        let arrivals = try await StartingGate.race(nodes) { node in
            try stores[node].recordDiscovered(node % 2 == 0 ? purchases : purchases.reversed(), settings: deliver, now: t0)
        }.flatMap { $0 }
        #expect(arrivals.filter { if case .recorded = $0 { true } else { false } }.count == purchases.count)
        #expect(arrivals.filter { if case .known = $0 { true } else { false } }.count == purchases.count * (nodes - 1))
        // Every node's scheduler settles at the grace's end, a few at a time.
        let made = try await StartingGate.race(nodes) { node in
            var orders: [String] = []
            while true {
                let settled = try stores[node].settleDiscovered(
                    settings: deliver, verifiers: ConfiguredVerifiers(kind: .appstore), now: t0 + 61, limit: 7, digest: { _ in "h" })
                if settled.isEmpty, try stores[node].nextGraceEnd() == nil { return orders }
                orders += settled.compactMap { if case .becameOrder(let id) = $0.status { id } else { nil } }
            }
        }
        let all = made.flatMap { $0 }
        #expect(all.count == purchases.count && Set(all).count == purchases.count, "made \(all.count), distinct \(Set(all).count)")
        let connection = try database.connect()
        #expect(try connection.scalar("SELECT count(*) FROM orders WHERE origin = 'store'") == Int64(purchases.count))
        #expect(try connection.scalar("SELECT count(*) FROM discovered_purchases WHERE status = 'became_order'") == Int64(purchases.count))
        print("discovery race, \(nodes) stores: orders made per store \(made.map(\.count))")
    }

    @Test("a refund taken in while another node's commit claimed its transaction (each read before the other committed) is applied by the next sweep")
    func refundPassingAClaim() async throws {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try database.openStore()
        _ = try store.ingest([candidate("L1")], verifierKind: .apple, now: t0)
        let refund = StoreNotification(
            source: .appStore, notificationID: "r-1", type: "REFUND", transactionID: "T-1", signedAt: t0, revokedAt: t0, via: .file)
        #expect(try store.ingestNotifications([refund], now: Date()) == [.taken(.unmatched)])
        // The other node's claim committed after the refund's matching read, and its own look for
        // unmatched refunds ran before the refund committed: neither saw the other.
        let connection = try database.connect()
        try connection.run(
            "INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) SELECT 'T-1', id, 0, 'daemon' FROM orders WHERE order_id = 'L1'")
        #expect(try store.applyWaitingNotifications(now: Date()) == [.applied(orderID: "L1", from: .pending, to: .rejected)])
        #expect(try store.notifications(unmatchedOnly: true, limit: 10).isEmpty)
        #expect(try store.applyWaitingNotifications(now: Date()).isEmpty)
    }
}
