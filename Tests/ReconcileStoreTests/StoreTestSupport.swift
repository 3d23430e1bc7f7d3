import Foundation
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

/// A store in a fresh temporary directory.
struct StoreFixture {
    let directory = TemporaryDirectory(prefix: "store")
    var path: String { directory.file("orders.db") }

    func open(_ mode: SQLiteOrderStore.OpenMode = .owner) throws -> SQLiteOrderStore {
        try SQLiteOrderStore(path: path, mode: mode)
    }
}

extension SQLiteOrderStore {
    /// Sets an order's state (and resume state) directly, as tests need orders in every state.
    func force(_ orderID: String, to state: OrderState, resume: OrderState? = nil, nextAttempt: Date? = nil) throws {
        try write { connection in
            try connection.run(
                "UPDATE orders SET state = ?, resume_state = ?, next_attempt_at = ? WHERE order_id = ?",
                [.text(state.rawValue), .text(orNull: resume?.rawValue), .integer(orNull: nextAttempt?.epochMilliseconds), .text(orderID)])
        }
    }

    func scalar(_ sql: String, _ parameters: [SQLiteValue] = []) throws -> Int64? {
        try withConnection { try $0.scalar(sql, parameters) }
    }
}

/// An ingest candidate for an order file.
func candidate(
    _ orderID: String, product: String = "gems", receipt: String? = "QUJD", transactionID: String? = nil,
    extra: String = "", file: String? = nil
) -> IngestCandidate {
    let text = OrderFixtures.orderJSON(orderID, product: product, receipt: receipt, transactionID: transactionID, extra: extra)
    let bytes = Array(text.utf8)
    let submission = try! OrderFileParser().parse(bytes)
    return IngestCandidate(submission: submission, raw: bytes, contentHash: "test:" + text, fileName: file ?? "\(orderID).json")
}

let t0 = Date(timeIntervalSince1970: 1_800_000_000)
