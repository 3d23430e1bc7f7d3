import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite

/// Fills a store quickly, straight through its ingest (no spool files).
enum Seeding {
    /// Inserts `count` pending orders, due at `dueAt`, in batches of 5,000, each with its file's
    /// SHA-256 as the daemon's ingest records it.
    ///
    /// - Returns: the time spent in the store's `ingest` alone (the files' parsing and hashing
    ///   left out).
    @discardableResult
    static func insertOrders(
        into store: some OrderIngesting, count: Int, at dueAt: Date, prefix: String = "B", receipt: String = "QUJD"
    ) throws -> Duration {
        let parser = OrderFileParser()
        var inStore = Duration.zero
        var start = 0
        while start < count {
            let end = min(start + 5_000, count)
            let batch = try (start..<end).map { index -> IngestCandidate in
                let text = "{\"order_id\":\"\(prefix)\(index)\",\"product_id\":\"gems\",\"receipt\":\"\(receipt)\"}"
                let bytes = Array(text.utf8)
                return IngestCandidate(submission: try parser.parse(bytes), raw: bytes, contentHash: SHA256.hexDigest(bytes), fileName: "seed")
            }
            let began = ContinuousClock.now
            _ = try store.ingest(batch, verifierKind: .http, now: dueAt)
            inStore += ContinuousClock.now - began
            start = end
        }
        return inStore
    }

    /// Inserts one pending Google Play order per purchase token (`[GooglePlay]` configured).
    static func insertPlayOrders(into store: SQLiteOrderStore, tokens: [String], prefix: String, at dueAt: Date) throws {
        let parser = OrderFileParser()
        var start = 0
        while start < tokens.count {
            let end = min(start + 5_000, tokens.count)
            let batch = try (start..<end).map { index -> IngestCandidate in
                let text = "{\"order_id\":\"\(prefix)\(index)\",\"product_id\":\"gems\",\"purchase_token\":\"\(tokens[index])\"}"
                let bytes = Array(text.utf8)
                return IngestCandidate(submission: try parser.parse(bytes), raw: bytes, contentHash: SHA256.hexDigest(bytes), fileName: "seed")
            }
            _ = try store.ingest(batch, verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: dueAt)
            start = end
        }
    }

    /// Inserts `count` pending orders, due at `dueAt`, into the store at `path` with SQL, in
    /// whichever layout its schema has (receipts in `orders` before schema 10, in `order_proofs`
    /// from it): for a baseline build's daemon, whose store this build's store code cannot open.
    static func insertRawOrders(path: String, count: Int, at dueAt: Date, prefix: String = "B", receipt: String) throws {
        let connection = try SQLiteConnection(path: path, mode: .readWrite(create: false))
        defer { connection.close() }
        let proofsApart = try connection.scalar("SELECT count(*) FROM sqlite_schema WHERE name = 'order_proofs'") == 1
        let due = SQLiteValue.integer(dueAt.epochMilliseconds)
        try connection.transaction {
            for index in 0..<count {
                let text = "{\"order_id\":\"\(prefix)\(index)\",\"product_id\":\"gems\",\"receipt\":\"\(receipt)\"}"
                let bytes = Array(text.utf8)
                let order: [SQLiteValue] = [.text("\(prefix)\(index)"), .text(SHA256.hexDigest(bytes)), due, due, due]
                if proofsApart {
                    try connection.run(
                        """
                        INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at)
                        VALUES (?, 'gems', 'pending', ?, ?, ?, ?)
                        """, order)
                    try connection.run(
                        "INSERT INTO order_proofs (order_ref, receipt, raw) VALUES (?, ?, ?)",
                        [.integer(connection.lastInsertRowID), .text(receipt), .blob(bytes)])
                } else {
                    try connection.run(
                        """
                        INSERT INTO orders (order_id, product_id, state, content_hash, received_at, updated_at, next_attempt_at, receipt, raw)
                        VALUES (?, 'gems', 'pending', ?, ?, ?, ?, ?, ?)
                        """, order + [.text(receipt), .blob(bytes)])
                }
            }
        }
    }
}
