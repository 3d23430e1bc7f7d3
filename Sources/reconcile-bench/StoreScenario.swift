import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite

/// **store**: the SQLite store alone at the daemon's pace, without the transport: the scheduler's
/// turns as it makes them (one transaction: the outcomes of the last 64 attempts, each a
/// merchant's grant, and the next 64 claims; `synchronous=FULL`, state on the real disk), until
/// every order is finished. Orders/s and this process's CPU per order: the share of the e2e
/// daemon's CPU that is the store's, and what a turn costs with long receipts and with short.
enum StoreScenario {
    static let name = "store"
    static let batch = 64

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 4_000 : 40_000)
        var report = BenchmarkReport(scenario: name)
        for (label, receipt) in [("1,200-character receipts", RawClient.receipt), ("8-character receipts", "QUJDREVG")] {
            let root = try options.makeDirectory(name)
            defer { try? FileManager.default.removeItem(atPath: root) }
            let (rate, cpu) = try measure(count: count, receipt: receipt, path: root + "/orders.db")
            report.add("turns, \(label)", rate, "orders/s")
            report.add("store CPU, \(label)", cpu, "us/order")
        }
        report.notes.append(
            "\(BenchmarkReport.format(Double(count))) orders, \(batch) per turn: claim, then a merchant's grant committed with the next claim; synchronous=FULL")
        return report
    }

    /// Seeds `count` due orders, then runs turns until all are finished.
    static func measure(count: Int, receipt: String, path: String) throws -> (rate: Double, cpuPerOrder: Double) {
        let store = try SQLiteOrderStore(path: path, mode: .owner)
        defer { store.close() }
        try Seeding.insertOrders(into: store, count: count, at: Date().addingTimeInterval(-60), receipt: receipt)
        return try turns(of: store, count: count)
    }

    /// Runs turns on a seeded store until its `count` due orders are finished: orders/s and this
    /// process's CPU per order.
    static func turns(of store: some OrderStore, count: Int) throws -> (rate: Double, cpuPerOrder: Double) {
        let resolver = AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false)
        var random = SystemRandomSource()
        let owner = "bench:\(getpid())"
        var inHand: [ClaimedOrder] = []
        var finished = 0
        let cpu = RawClient.cpuSeconds()
        let start = ContinuousClock.now
        while true {
            let now = Date()
            let completions = inHand.map { order in
                let record = AttemptRecord(endpoint: .merchant, httpStatus: 200, latency: .milliseconds(1), outcome: .answered, startedAt: now)
                let grant = Grant(transactionID: "T-\(order.orderID)", productID: order.productID)
                return resolver.resolve(
                    VerifierOutcome(records: [record], verdict: .granted(grant, finishedBy: .merchant)), for: order, now: now,
                    circuitClosed: true, retryAt: now, random: &random)
            }
            let turn = try store.commit(
                completions, claims: [ClaimRequest(kind: .verify, limit: batch, charge: true, leaseUntil: now.addingTimeInterval(120))],
                owner: owner, now: now)
            finished += turn.results.filter { $0.applied && $0.to == .finished }.count
            inHand = turn.claimed[0]
            if inHand.isEmpty { break }
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        let used = RawClient.cpuSeconds() - cpu
        guard finished == count else { throw BenchmarkError("\(finished) of \(count) orders finished in the store scenario") }
        return (Double(count) / elapsed, used / Double(count) * 1e6)
    }
}
