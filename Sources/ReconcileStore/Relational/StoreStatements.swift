import Foundation
import ReconcileCore
import Synchronization

/// The statements every turn runs for every order, rendered once (``SQLTemplate``). Each is
/// written as an ordinary statement whose interpolated values only mark where the values go;
/// ``StoreTransaction`` binds them in that order. Templates live as long as the process (their
/// identity keys the connections' caches).
enum StoreStatements {
    private static let mark = SQLValue.null
    private static let ids = [Int64]()
    private static let texts = [String]()

    static let recordByID = SQLTemplate("\(OrderColumns.select()) WHERE o.id = \(mark) \(.forUpdateOf("o"))")
    static let recordByOrderID = SQLTemplate("\(OrderColumns.select()) WHERE o.order_id = \(mark) \(.forUpdateOf("o"))")
    static let recordsByID = SQLTemplate("\(OrderColumns.select()) WHERE o.id \(in: ids) ORDER BY o.id \(.forUpdateOf("o"))")
    static let recordsByOrderID = SQLTemplate("\(OrderColumns.select()) WHERE o.order_id \(in: texts) ORDER BY o.id \(.forUpdateOf("o"))")

    /// `order_id, product_id`, then ``OrderColumns/plan``. Returns the new key (and the order
    /// id, by which a batch's rows find their orders); nothing when the order id is taken.
    static let insertOrder = SQLTemplate(
        """
        \(raw: OrderColumns.insertPrefix)\(SQLStatement.list([SQLValue](repeating: mark, count: OrderColumns.plan.count + 2))))
        ON CONFLICT (order_id) DO NOTHING RETURNING id, order_id
        """,
        batch: .unnest(
            into: "orders", columns: ([.orderID, .productID] + OrderColumns.plan).map { ($0.name, $0.arrayType) }, key: "order_id",
            suffix: "ON CONFLICT (order_id) DO NOTHING RETURNING id, order_id"
        ).returning(0, inColumn: 1))
    /// The order's key, the receipt, the signed transaction, the raw file. Batched as binary
    /// arrays: reading a receipt of a few KB through the server's JSON parser costs more than a
    /// statement of its own (≈100 against ≈24 µs a row, 1,200-character receipts).
    static let insertProof = SQLTemplate(
        "INSERT INTO order_proofs (order_ref, receipt, signed_transaction, raw) VALUES (\(mark), \(mark), \(mark), \(mark))",
        batch: .unnest(
            into: "order_proofs", columns: [("order_ref", "bigint"), ("receipt", "text"), ("signed_transaction", "text"), ("raw", "bytea")],
            key: "order_ref"))
    /// The order's key, the receipt, the signed transaction (new proof taken in).
    static let updateProof = SQLTemplate(
        """
        INSERT INTO order_proofs (order_ref, receipt, signed_transaction) VALUES (\(mark), \(mark), \(mark))
        ON CONFLICT (order_ref) DO UPDATE SET receipt = excluded.receipt, signed_transaction = excluded.signed_transaction
        """, batch: .alone(keyIndex: 0, valueCount: 3))
    /// ``OrderColumns/plan``, then the key: every column (a record not read in the transaction).
    static let updateWholeOrder = SQLTemplate(
        """
        UPDATE orders SET \(SQLStatement.assignments(OrderColumns.planNames, [SQLValue](repeating: mark, count: OrderColumns.plan.count)))
        WHERE id = \(mark)
        """, batch: .update("orders", columns: OrderColumns.planNames))
    /// An update of `columns` only (their values, then the key): one template per set of
    /// columns a rule changes (a claim's, a grant's, a retry's: a few dozen in all).
    static func updateOrder(_ columns: [OrderColumn]) -> SQLTemplate {
        let mask = columns.reduce(UInt64(0)) { $0 | (1 << UInt64($1.rawValue)) }
        return updates.withLock { cache in
            if let template = cache[mask] { return template }
            let template = SQLTemplate(
                """
                UPDATE orders SET \(SQLStatement.assignments(columns.map(\.name), [SQLValue](repeating: mark, count: columns.count)))
                WHERE id = \(mark)
                """, batch: .update("orders", columns: columns.map(\.name)))
            cache[mask] = template
            return template
        }
    }

    /// The templates of ``updateOrder(_:)`` by their columns' bits: at most 2^36 in theory, a few
    /// dozen in practice (the rules change a handful of column sets), kept for the process.
    private static let updates = Mutex<[UInt64: SQLTemplate]>([:])

    /// The order's key, the raw file.
    static let updateRaw = SQLTemplate(
        "INSERT INTO order_proofs (order_ref, raw) VALUES (\(mark), \(mark)) ON CONFLICT (order_ref) DO UPDATE SET raw = excluded.raw",
        batch: .alone(keyIndex: 0, valueCount: 2))

    /// An attempt's request: sent with the turn's other writes (its transition finds it again,
    /// ``insertLinkedTransition``).
    static let insertAttempt = SQLTemplate(
        """
        INSERT INTO attempts (\(raw: attemptColumns.joined(separator: ", ")))
        VALUES (\(SQLStatement.list([SQLValue](repeating: mark, count: attemptColumns.count))))
        """, batch: .insert(into: "attempts", columns: attemptColumns, key: "order_ref"))
    private static let attemptColumns = [
        "order_ref", "number", "kind", "started_at", "endpoint", "environment", "http_status", "verifier_status", "latency_ms", "outcome",
        "detail",
    ]
    /// A claim (the transaction id, the order's key, the time, the actor), answering the key when
    /// it was inserted: the in-process store's, which learns at once.
    static let insertClaim = SQLTemplate(claimInsert + " RETURNING order_ref")
    /// The same claim on a shared store, settled at commit (``claimHeldElsewhere``).
    static let insertClaimLater = SQLTemplate(
        claimInsert,
        batch: .insert(into: "claims", columns: claimColumns, key: "order_ref", suffix: "ON CONFLICT (transaction_id) DO NOTHING"))
    private static let claimColumns = ["transaction_id", "order_ref", "claimed_at", "actor"]
    private static let claimInsert: SQLStatement = """
        INSERT INTO claims (\(raw: claimColumns.joined(separator: ", "))) VALUES (\(SQLStatement.list([SQLValue](repeating: mark, count: 4))))
        ON CONFLICT (transaction_id) DO NOTHING
        """
    /// A row when the transaction (first value) is claimed by another order than the key (second
    /// value): a claim this transaction meant to take and another took first.
    static let claimHeldElsewhere = SQLTemplate(
        "SELECT transaction_id FROM claims WHERE transaction_id = \(mark) AND order_ref <> \(mark)",
        batch: SQLBatch(
            postgresql: """
                SELECT c.transaction_id FROM claims AS c JOIN json_populate_recordset(NULL::claims, $1::json) AS v
                    ON c.transaction_id = v.transaction_id
                WHERE c.order_ref <> v.order_ref
                """,
            columns: ["transaction_id", "order_ref"], keyIndex: 1, onePerKey: false, returned: (0, 0)))
    static let claimHolder = SQLTemplate("SELECT order_ref FROM claims WHERE transaction_id = \(mark)")
    static let insertTransition = SQLTemplate(
        """
        INSERT INTO transitions (\(raw: transitionColumns.joined(separator: ", ")), attempt_ref)
        VALUES (\(SQLStatement.list([SQLValue](repeating: mark, count: 8))))
        """,
        batch: .unnest(
            into: "transitions", columns: zip(transitionColumns + ["attempt_ref"], transitionTypes + ["bigint"]).map { ($0, $1) },
            key: "order_ref"))
    /// A transition linked to the order's last attempt, written earlier in the same plan: the
    /// attempt's key is found again (the order's highest, under the order's row lock) instead of
    /// being read back, so that neither statement waits for an answer. Binds the order's key
    /// twice (for the row, and to find the attempt).
    static let insertLinkedTransition = SQLTemplate(
        """
        INSERT INTO transitions (\(raw: transitionColumns.joined(separator: ", ")), attempt_ref)
        VALUES (\(SQLStatement.list([SQLValue](repeating: mark, count: 7))), (SELECT max(id) FROM attempts WHERE order_ref = \(mark)))
        """,
        batch: .insert(
            into: "transitions", columns: transitionColumns + [nil], key: "order_ref",
            select: ["attempt_ref": "(SELECT max(a.id) FROM attempts AS a WHERE a.order_ref = v.order_ref)"]))
    private static let transitionColumns = ["order_ref", "at", "actor", "from_state", "to_state", "reason", "detail"]
    private static let transitionTypes = ["bigint", "bigint", "text", "text", "text", "text", "text"]
    static let insertOutbox = SQLTemplate(
        """
        INSERT INTO outbox (\(raw: OutboxColumns.insert.joined(separator: ", ")))
        VALUES (\(SQLStatement.list([SQLValue](repeating: mark, count: OutboxColumns.insert.count))))
        ON CONFLICT (idempotency_key) DO NOTHING
        """,
        batch: .insert(into: "outbox", columns: OutboxColumns.insert, key: "order_ref", suffix: "ON CONFLICT (idempotency_key) DO NOTHING"))
    /// ``OutboxColumns/update``, then the key.
    static let updateOutbox = SQLTemplate(
        """
        UPDATE outbox SET \(SQLStatement.assignments(OutboxColumns.update, [SQLValue](repeating: mark, count: OutboxColumns.update.count)))
        WHERE id = \(mark)
        """)
    static let claimants = SQLTemplate(
        "SELECT c.transaction_id, o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id \(in: texts)")
    static let discoveredOrders = SQLTemplate(
        """
        SELECT d.transaction_key, o.order_id FROM discovered_purchases d JOIN orders o ON o.id = d.order_ref
        WHERE d.status = 'became_order' AND d.transaction_key \(in: texts)
        """)
    static let anyNotificationWaiting = SQLTemplate(
        "SELECT 1 FROM notifications \(.indexedBy("notifications_waiting")) WHERE outcome = 'waiting' LIMIT 1")

    /// Due orders of each kind (`now`, then the limit): see ``RelationalOrderStore/dueOrders(_:now:limit:)``.
    private static let dueVerify = SQLTemplate(dueOrders(.verify))
    private static let dueVerifyPlay = SQLTemplate(dueOrders(.verifyPlay))
    private static let dueDeliver = SQLTemplate(dueOrders(.deliver))

    static func due(_ kind: WorkKind) -> SQLTemplate {
        switch kind {
        case .verify: dueVerify
        case .verifyPlay: dueVerifyPlay
        case .deliver: dueDeliver
        }
    }

    /// Due orders of `kind`, earliest first, locked for leasing: a range scan of the partial
    /// index that holds exactly the orders of that kind waiting for an attempt (pinned with
    /// `INDEXED BY` on SQLite, whose planner would otherwise sort the backlog). On a shared store
    /// rows another node is leasing are skipped, not waited for.
    private static func dueOrders(_ kind: WorkKind) -> SQLStatement {
        """
        \(OrderColumns.select(indexedBy: DueOrders.index(kind)))
        WHERE o.next_attempt_at IS NOT NULL AND o.next_attempt_at <= \(mark) AND \(raw: DueOrders.condition(kind, alias: "o"))
        ORDER BY o.next_attempt_at
        LIMIT \(mark)
        \(.forUpdateOfSkipLocked("o"))
        """
    }
}
