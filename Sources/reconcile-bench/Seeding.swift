import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileStore
import ReconcileSQLite

/// Fills a store quickly, straight through its ingest (no spool files).
enum Seeding {
    /// Inserts `count` pending orders, due at `dueAt`, in batches of 5,000, each with its file's
    /// SHA-256 as the daemon's ingest records it.
    static func insertOrders(into store: some OrderIngesting, count: Int, at dueAt: Date, prefix: String = "B", receipt: String = "QUJD") throws {
        let parser = OrderFileParser()
        var start = 0
        while start < count {
            let end = min(start + 5_000, count)
            let batch = try (start..<end).map { index -> IngestCandidate in
                let text = "{\"order_id\":\"\(prefix)\(index)\",\"product_id\":\"gems\",\"receipt\":\"\(receipt)\"}"
                let bytes = Array(text.utf8)
                return IngestCandidate(submission: try parser.parse(bytes), raw: bytes, contentHash: SHA256.hexDigest(bytes), fileName: "seed")
            }
            _ = try store.ingest(batch, verifierKind: .http, now: dueAt)
            start = end
        }
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
}
