import Foundation
import ReconcileFoundation
import ReconcilePostgreSQL
import ReconcileStore
import TestSupport

/// **pg-seed**: PostgreSQL seeding alone (issue 24's last target), on the tests' throw-away
/// server: our store's ingest of `count` new orders with 1,200-character receipts, in batches of
/// 5,000 as `Seeding` does, in a fresh database each round; and, beside it in the same rounds, the
/// server's own limit for the same rows — `INSERT … SELECT generate_series` of the orders, their
/// proofs and their first transitions, one transaction. Rounds alternate the two, and each figure
/// is the median of the rounds: this machine's speed drifts by more than the difference.
///
/// With `--baseline <reconcile-bench>` the other build's `pg-seed` runs after each of ours (it
/// must have this scenario), so the two builds' figures come from interleaved rounds.
enum PostgreSQLSeedingScenario {
    static let name = "pg-seed"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 4_000 : 20_000)
        let rounds = options.quick ? 1 : 5
        var report = BenchmarkReport(scenario: name)
        let server: PostgreSQLTestServer
        do {
            server = try PostgreSQLTestServer.shared()
        } catch let error as PostgreSQLTestServerError {
            report.notes.append("postgresql: not measured (\(error.reason))")
            return report
        }
        let receipt = RawClient.receipt
        var ours: [Round] = []
        var limit: [Double] = []
        var baseline: [Double] = []
        for _ in 0..<rounds {
            ours.append(try StoreLimitPostgreSQL.withDatabase(server) { database in
                try oursRound(server: server, database: database, count: count, receipt: receipt)
            })
            limit.append(try StoreLimitPostgreSQL.withDatabase(server) { database in
                try limitRound(server: server, database: database, count: count, receipt: receipt)
            })
            if let executable = options.baseline {
                baseline.append(try baselineRound(executable, count: count))
            }
        }
        report.add("postgresql (ours): seeding", RequestLog.percentile(ours.map(\.rate), 0.5), "orders/s")
        report.add("postgresql (ours): seeding, the store's ingest alone", RequestLog.percentile(ours.map(\.storeRate), 0.5), "orders/s")
        report.add("postgresql (ours): seeding CPU, this process", RequestLog.percentile(ours.map(\.clientPerOrder), 0.5), "us/order")
        report.add("postgresql (ours): seeding CPU, the server", RequestLog.percentile(ours.map(\.serverPerOrder), 0.5), "us/order")
        if !baseline.isEmpty { report.add("postgresql (ours) [baseline]: seeding", RequestLog.percentile(baseline, 0.5), "orders/s") }
        report.add("postgresql, SQL alone (generate_series): seeding", RequestLog.percentile(limit, 0.5), "orders/s")
        report.notes.append(
            "postgresql \(server.version): the tests' server (fsync=off, synchronous_commit=off), unix socket; "
                + "\(BenchmarkReport.format(Double(count))) orders of 1,200-character receipts per round, medians of \(rounds) "
                + "interleaved rounds; each round in a new database; runs: ours \(ours.map { Int($0.rate) }), "
                + "SQL alone \(limit.map(Int.init))\(baseline.isEmpty ? "" : ", baseline \(baseline.map(Int.init))")")
        return report
    }

    struct Round {
        var rate: Double
        var storeRate: Double
        var clientPerOrder: Double
        var serverPerOrder: Double
    }

    static func oursRound(server: PostgreSQLTestServer, database: String, count: Int, receipt: String) throws -> Round {
        let store = try PostgreSQLOrderStore(options: PostgreSQLConnectionOptions(uri: server.socketURI(database: database)), node: "seed")
        defer { store.close() }
        let serverCPU = ClusterScenario.databaseCPU(server)
        let clientCPU = RawClient.cpuSeconds()
        let start = ContinuousClock.now
        let inStore = try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-60), receipt: receipt)
        let elapsed = (ContinuousClock.now - start).inSeconds
        return Round(
            rate: Double(count) / elapsed, storeRate: Double(count) / inStore.inSeconds,
            clientPerOrder: (RawClient.cpuSeconds() - clientCPU) / Double(count) * 1e6,
            serverPerOrder: ClusterScenario.databaseCPU(server).subtracting(serverCPU) / Double(count) * 1e6)
    }

    /// The same rows written by the server alone: what no client can beat.
    static func limitRound(server: PostgreSQLTestServer, database: String, count: Int, receipt: String) throws -> Double {
        let connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: database)))
        defer { connection.close() }
        let due = Date().addingTimeInterval(-60).epochMilliseconds
        let start = ContinuousClock.now
        for first in stride(from: 0, to: count, by: 5_000) {
            let last = min(first + 5_000, count) - 1
            try connection.execute(
                """
                BEGIN;
                CREATE TEMPORARY TABLE files ON COMMIT DROP AS
                    SELECT 'B' || g AS order_id, '{"order_id":"B' || g || '","product_id":"gems","receipt":"\(receipt)"}' AS text
                    FROM generate_series(\(first), \(last)) AS g;
                WITH inserted AS (
                    INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
                    SELECT order_id, 'gems', 'pending', md5(text), \(due), \(due), \(due) FROM files
                    RETURNING id, order_id
                ), proofs AS (
                    INSERT INTO order_proofs (order_ref, receipt, raw)
                    SELECT i.id, '\(receipt)', convert_to(f.text, 'UTF8') FROM inserted i JOIN files f USING (order_id)
                )
                INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail)
                SELECT id, \(due), 'daemon', NULL, 'pending', 'received', 'spool file seed' FROM inserted;
                COMMIT;
                """)
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// One round of the other build's `pg-seed`, run as a child: its seeding rate, from its
    /// JSON line.
    static func baselineRound(_ executable: String, count: Int) throws -> Double {
        let figures = try BenchmarkReport.figures(ofChild: [executable, name, "--quick", "--files", String(count)], scenario: name)
        guard let rate = figures["postgresql__ours___seeding"] else {
            throw BenchmarkError("the baseline's pg-seed scenario gave no seeding figure: \(figures.keys.sorted())")
        }
        return rate
    }
}
