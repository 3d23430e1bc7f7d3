import Foundation
import ReconcileCore
import ReconcileStore

/// Fills a store quickly, straight through its ingest (no spool files).
enum Seeding {
    /// Inserts `count` pending orders, due at `dueAt`, in batches of 5,000.
    static func insertOrders(into store: some OrderIngesting, count: Int, at dueAt: Date, prefix: String = "B") throws {
        let parser = OrderFileParser()
        var start = 0
        while start < count {
            let end = min(start + 5_000, count)
            let batch = try (start..<end).map { index -> IngestCandidate in
                let text = "{\"order_id\":\"\(prefix)\(index)\",\"product_id\":\"gems\",\"receipt\":\"QUJD\"}"
                let bytes = Array(text.utf8)
                return IngestCandidate(submission: try parser.parse(bytes), raw: bytes, contentHash: text, fileName: "seed")
            }
            _ = try store.ingest(batch, verifierKind: .http, now: dueAt)
            start = end
        }
    }
}
