import CSQLite
import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL
import ReconcileSQLite
import TestSupport

/// **store-limit**: what the databases themselves do on the `store` scenario's statements, beside
/// what our store does — the physical limit the store is compared with (issue 24).
///
/// - `store (ours)`: the `store` scenario's turns through `SQLiteOrderStore`.
/// - `sqlite, wide row`: the same rows (seeded as `Seeding` seeds them: the 1,200-character
///   receipt, the file's bytes and the content hash in the order's row) in the real schema, and
///   the same turns straight through the C API with statements prepared once: one transaction
///   per turn (`BEGIN IMMEDIATE`, WAL, `synchronous=FULL`, foreign keys on, state on the real
///   disk) that finishes the last 64 orders (each: the claimants lookup, an `UPDATE` of the
///   columns that change, an attempts, a claims and a transitions row) and leases the next 64
///   through the `orders_due_verify` partial index (each: an `UPDATE` of what changes and a
///   transitions row), reading what the verifier needs (the receipt).
/// - `sqlite, narrow row`: the same, with what never changes after ingest (receipt, file, content
///   hash) in a table of its own, so that the hot row is small.
/// - `postgresql`: `pgbench` with `scripts/pgbench-store.sql` (the same turn as multi-row
///   statements, `FOR UPDATE SKIP LOCKED`) against the tests' throw-away server (`fsync=off`,
///   as in the cluster scenario), seeding by one `INSERT … SELECT generate_series`; and our
///   `PostgreSQLOrderStore` doing the `store` scenario's turns on the same server.
///
/// CPU per order is this process's (SQLite runs in it); for PostgreSQL it is the server's plus
/// pgbench's (or ours). `--baseline <reconcile-bench>` adds that build's `store` scenario (run as
/// a child, same order count) beside ours.
enum StoreLimitScenario {
    static let name = "store-limit"
    static let batch = 64

    /// The hot row's shape.
    enum Shape: String, CaseIterable {
        case wide = "wide row"
        case narrow = "narrow row"
    }

    /// One measured run of turns.
    struct Run {
        var seedRate: Double
        var rate: Double
        var cpuPerOrder: Double
        var walPagesPerOrder: Double?
        /// The part of ``cpuPerOrder`` spent in the kernel (writes, fsync, checkpoints).
        var kernelPerOrder: Double?
        /// PostgreSQL: the part of ``cpuPerOrder`` that is the server's.
        var serverPerOrder: Double?
        /// PostgreSQL, our store: this process's and the server's CPU an order while seeding
        /// (they take turns, so their sum is about the seeding's time an order).
        var seedCPU: (client: Double, server: Double)?
        /// Seeding timed in the store's `ingest` alone, without the files' parsing and hashing,
        /// which the daemon does on every core while the bench does it on one.
        var storeSeedRate: Double?
    }

    /// This process's system (kernel) CPU seconds so far.
    static func kernelSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 4_000 : 40_000)
        var report = BenchmarkReport(scenario: name)
        let receipt = RawClient.receipt

        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let ours = try StoreScenario.measure(count: count, receipt: receipt, path: root + "/ours.db")
        report.add("store (ours): turns", ours.rate, "orders/s")
        report.add("store (ours): CPU", ours.cpuPerOrder, "us/order")
        if let baseline = options.baseline {
            let figures = try baselineStore(baseline, count: count, directory: options.baseDirectory)
            report.add("store (ours) [baseline]: turns", figures.rate, "orders/s")
            report.add("store (ours) [baseline]: CPU", figures.cpuPerOrder, "us/order")
        }
        for shape in Shape.allCases {
            let run = try measureSQLite(shape: shape, count: count, receipt: receipt, path: root + "/\(shape == .wide ? "wide" : "narrow").db")
            report.add("sqlite, \(shape.rawValue): seeding", run.seedRate, "orders/s")
            report.add("sqlite, \(shape.rawValue): turns", run.rate, "orders/s")
            report.add("sqlite, \(shape.rawValue): CPU", run.cpuPerOrder, "us/order")
            if let kernel = run.kernelPerOrder { report.add("sqlite, \(shape.rawValue): of which kernel", kernel, "us/order") }
            if let pages = run.walPagesPerOrder { report.add("sqlite, \(shape.rawValue): WAL pages", pages, "pages/order") }
        }
        report.notes.append(
            "\(BenchmarkReport.format(Double(count))) orders of 1,200-character receipts, \(batch) per turn, one transaction per turn; "
                + "synchronous=FULL, WAL, state on \(DiskProbe.filesystem(of: root)); sqlite = the C API, statements prepared once, "
                + "only changed columns written")

        do {
            let server = try PostgreSQLTestServer.shared()
            try StoreLimitPostgreSQL.measure(server: server, count: count, receipt: receipt, into: &report)
        } catch let error as PostgreSQLTestServerError {
            report.notes.append("postgresql: not measured (\(error.reason))")
        }
        return report
    }

    /// The baseline build's `store` scenario (`--baseline`), run as a child: its figures with
    /// 1,200-character receipts, from its JSON line.
    static func baselineStore(_ executable: String, count: Int, directory: String) throws -> (rate: Double, cpuPerOrder: Double) {
        let figures = try BenchmarkReport.figures(
            ofChild: [executable, "store", "--files", String(count), "--dir", directory], scenario: "store")
        guard let rate = figures["turns__1_200_character_receipts"], let cpu = figures["store_cpu__1_200_character_receipts"] else {
            throw BenchmarkError("the baseline's store scenario gave no figures for 1,200-character receipts: \(figures.keys.sorted())")
        }
        return (rate, cpu)
    }

    // MARK: - SQLite through the C API

    /// Creates the real schema (through the store, closed again), seeds `count` due orders and
    /// runs turns until every one is finished.
    static func measureSQLite(shape: Shape, count: Int, receipt: String, path: String) throws -> Run {
        try SQLiteOrderStore(path: path, mode: .owner).close()
        let database = try RawSQLite(path: path)
        if shape == .narrow {
            try database.execute(
                """
                CREATE TABLE limit_proofs (
                    order_ref INTEGER PRIMARY KEY REFERENCES orders(id),
                    receipt TEXT,
                    raw BLOB,
                    content_hash TEXT NOT NULL
                )
                """)
        }
        let dueAt = Date().addingTimeInterval(-60).epochMilliseconds
        let seedRate = try seed(database, shape: shape, count: count, receipt: receipt, at: dueAt)
        try database.execute("PRAGMA wal_checkpoint(TRUNCATE)")

        let statements = try TurnStatements(database, shape: shape)
        defer { statements.finalize() }
        let owner = "bench:\(getpid())"
        var inHand: [(reference: Int64, orderID: String, productID: String, attempt: Int64)] = []
        var finished = 0
        var receiptBytes = 0
        let frames = database.framesAppended
        let cpu = RawClient.cpuSeconds()
        let kernel = kernelSeconds()
        let start = ContinuousClock.now
        while true {
            let now = Date().epochMilliseconds
            try database.run(statements.begin)
            for order in inHand {
                let transactionID = "T-\(order.orderID)"
                // The grant rule asks who else claimed the transaction.
                let lookup = statements.claimants
                lookup.bind(1, transactionID)
                while sqlite3_step(lookup) == SQLITE_ROW {}
                sqlite3_reset(lookup)

                let finish = statements.finish
                finish.bind(1, order.reference)
                finish.bind(2, now)
                finish.bind(3, transactionID)
                finish.bind(4, order.productID)
                finish.bind(5, owner)
                try database.run(finish)
                guard sqlite3_changes(database.handle) == 1 else { throw BenchmarkError("order \(order.orderID) was not leased") }

                let attempt = statements.attempt
                attempt.bind(1, order.reference)
                attempt.bind(2, order.attempt)
                attempt.bind(3, now - 1)
                try database.run(attempt)
                let attemptRef = database.lastInsertRowID

                let claim = statements.claim
                claim.bind(1, transactionID)
                claim.bind(2, order.reference)
                claim.bind(3, now)
                try database.run(claim)

                let transition = statements.transition
                transition.bind(1, order.reference)
                transition.bind(2, now)
                transition.bind(3, "verifying")
                transition.bind(4, "finished")
                transition.bind(5, "verified")
                transition.bindNull(6)
                transition.bind(7, attemptRef)
                try database.run(transition)
                finished += 1
            }
            inHand.removeAll(keepingCapacity: true)

            let due = statements.due
            due.bind(1, now)
            due.bind(2, Int64(batch))
            while true {
                let step = sqlite3_step(due)
                guard step == SQLITE_ROW else {
                    sqlite3_reset(due)
                    try database.check(step, "due orders")
                    break
                }
                // What the verifier is handed: the order, its product and its receipt.
                let orderID = String(cString: sqlite3_column_text(due, 1)!)
                let productID = String(cString: sqlite3_column_text(due, 2)!)
                receiptBytes += Int(sqlite3_column_bytes(due, 3))
                inHand.append((sqlite3_column_int64(due, 0), orderID, productID, sqlite3_column_int64(due, 4) + 1))
            }
            for order in inHand {
                let lease = statements.lease
                lease.bind(1, order.reference)
                lease.bind(2, owner)
                lease.bind(3, now + 120_000)
                lease.bind(4, now)
                try database.run(lease)
                let transition = statements.transition
                transition.bind(1, order.reference)
                transition.bind(2, now)
                transition.bind(3, "pending")
                transition.bind(4, "verifying")
                transition.bind(5, "attempt")
                transition.bind(6, "attempt \(order.attempt)")
                transition.bindNull(7)
                try database.run(transition)
            }
            try database.run(statements.commit)
            if inHand.isEmpty { break }
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        let used = RawClient.cpuSeconds() - cpu
        guard finished == count, receiptBytes == count * receipt.utf8.count else {
            throw BenchmarkError("\(finished) of \(count) orders finished (\(receiptBytes) receipt bytes read) in store-limit, \(shape.rawValue)")
        }
        return Run(
            seedRate: seedRate, rate: Double(count) / elapsed, cpuPerOrder: used / Double(count) * 1e6,
            walPagesPerOrder: Double(database.framesAppended - frames) / Double(count),
            kernelPerOrder: (kernelSeconds() - kernel) / Double(count) * 1e6)
    }

    /// Inserts `count` pending orders as `Seeding` does (order row and its `received` transition,
    /// 5,000 per transaction); orders/s.
    static func seed(_ database: RawSQLite, shape: Shape, count: Int, receipt: String, at dueAt: Int64) throws -> Double {
        let insert = try database.prepare(
            shape == .wide
                ? """
                INSERT INTO orders (order_id, product_id, state, receipt, raw, content_hash, received_at, updated_at, next_attempt_at)
                VALUES (?1, 'gems', 'pending', ?2, ?3, ?4, ?5, ?5, ?5)
                """
                : """
                INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
                VALUES (?1, 'gems', 'pending', '', ?5, ?5, ?5)
                """)
        let proof = try database.prepare("INSERT INTO limit_proofs (order_ref, receipt, raw, content_hash) VALUES (?1, ?2, ?3, ?4)", if: shape == .narrow)
        let transition = try database.prepare(
            "INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail) VALUES (?1, ?2, 'daemon', NULL, 'pending', 'received', 'spool file seed')")
        defer { [insert, proof, transition].forEach { sqlite3_finalize($0) } }
        let start = ContinuousClock.now
        var index = 0
        while index < count {
            try database.execute("BEGIN IMMEDIATE")
            for _ in 0..<min(5_000, count - index) {
                let orderID = "B\(index)"
                let text = "{\"order_id\":\"\(orderID)\",\"product_id\":\"gems\",\"receipt\":\"\(receipt)\"}"
                var utf8 = text
                try utf8.withUTF8 { raw in
                    insert.bind(1, orderID)
                    insert.bind(5, dueAt)
                    if shape == .wide {
                        insert.bind(2, receipt)
                        insert.bind(3, bytes: UnsafeRawBufferPointer(raw))
                        insert.bindText(4, bytes: UnsafeRawBufferPointer(raw))
                    }
                    try database.run(insert)
                    let reference = database.lastInsertRowID
                    if let proof {
                        proof.bind(1, reference)
                        proof.bind(2, receipt)
                        proof.bind(3, bytes: UnsafeRawBufferPointer(raw))
                        proof.bindText(4, bytes: UnsafeRawBufferPointer(raw))
                        try database.run(proof)
                    }
                    transition.bind(1, reference)
                    transition.bind(2, dueAt)
                    try database.run(transition)
                }
                index += 1
            }
            try database.execute("COMMIT")
        }
        return Double(count) / (ContinuousClock.now - start).inSeconds
    }

    /// The turn's statements, prepared once.
    struct TurnStatements {
        let begin, commit, claimants, finish, attempt, claim, transition, due, lease: OpaquePointer

        init(_ database: RawSQLite, shape: Shape) throws {
            begin = try database.prepare("BEGIN IMMEDIATE")
            commit = try database.prepare("COMMIT")
            claimants = try database.prepare("SELECT o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = ?1")
            finish = try database.prepare(
                """
                UPDATE orders SET state = 'finished', lease_owner = NULL, leased_until = NULL, lease_proof_revision = NULL,
                    updated_at = ?2, verified_transaction_id = ?3, verified_product_id = ?4, finished_by = 'merchant'
                WHERE id = ?1 AND lease_owner = ?5
                """)
            attempt = try database.prepare(
                """
                INSERT INTO attempts (order_ref, number, kind, started_at, endpoint, environment, http_status, verifier_status,
                    latency_ms, outcome, detail)
                VALUES (?1, ?2, 'verify', ?3, 'merchant', NULL, 200, NULL, 1, 'answered', NULL)
                """)
            claim = try database.prepare("INSERT OR IGNORE INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES (?1, ?2, ?3, 'daemon')")
            transition = try database.prepare(
                "INSERT INTO transitions (order_ref, at, actor, from_state, to_state, reason, detail, attempt_ref) VALUES (?1, ?2, 'daemon', ?3, ?4, ?5, ?6, ?7)")
            due = try database.prepare(
                shape == .wide
                    ? """
                    SELECT id, order_id, product_id, receipt, attempts FROM orders INDEXED BY orders_due_verify
                    WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?1 AND state = 'pending' AND purchase_token IS NULL
                    ORDER BY next_attempt_at LIMIT ?2
                    """
                    : """
                    SELECT o.id, o.order_id, o.product_id, p.receipt, o.attempts FROM orders AS o INDEXED BY orders_due_verify
                    JOIN limit_proofs AS p ON p.order_ref = o.id
                    WHERE o.next_attempt_at IS NOT NULL AND o.next_attempt_at <= ?1 AND o.state = 'pending' AND o.purchase_token IS NULL
                    ORDER BY o.next_attempt_at LIMIT ?2
                    """)
            lease = try database.prepare(
                """
                UPDATE orders SET state = 'verifying', lease_owner = ?2, leased_until = ?3, lease_proof_revision = proof_revision,
                    next_attempt_at = NULL, attempts = attempts + 1, updated_at = ?4
                WHERE id = ?1
                """)
        }

        func finalize() {
            for statement in [begin, commit, claimants, finish, attempt, claim, transition, due, lease] { sqlite3_finalize(statement) }
        }
    }
}

extension RawSQLite {
    /// Prepares `sql` when `condition` holds.
    func prepare(_ sql: String, if condition: Bool) throws -> OpaquePointer? {
        condition ? try prepare(sql) : nil
    }
}
