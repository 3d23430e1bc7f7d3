import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// Applies an operator action; `verifierKind` decides whether a retried order has usable
    /// proof (`nil`: any proof counts).
    public func apply(_ request: OperatorRequest, verifierKind: VerifierKind?, now: Date) throws -> [OperatorOutcome] {
        try write { connection in
            let orderIDs: [String]
            switch request.target {
            case .orders(let ids):
                orderIDs = ids
            case .state(let state):
                orderIDs = try connection.query(
                    "SELECT order_id FROM orders WHERE state = ? ORDER BY received_at", [.text(state.rawValue)]
                ) { $0.string(0) }
            }
            return try orderIDs.map { orderID in
                try Self.operate(orderID, request, verifierKind: verifierKind, now: now, connection: connection)
            }
        }
    }

    /// Orders per transaction in ``applyInBatches(_:verifierKind:now:batchSize:sampleSize:shouldStop:each:)``.
    public static let operatorBatchSize = 1_000

    /// Applies an operator action in batches of `batchSize` orders, one transaction each, so
    /// that an action on 150,000 orders never holds the store for long: the scheduler's
    /// commits, its watchdog pings and other requests get their turn between two batches.
    ///
    /// For a `.state` target the orders are those in the state when the action begins, in the
    /// order they were taken in; one that has left the state before its batch comes is skipped.
    /// `shouldStop` is asked before each batch; when it says so, the outcome is `interrupted`
    /// and counts the orders not reached. `each` sees every outcome, after its batch committed.
    public func applyInBatches(
        _ request: OperatorRequest, verifierKind: VerifierKind?, now: () -> Date = Date.init,
        batchSize: Int = SQLiteOrderStore.operatorBatchSize, sampleSize: Int = 100,
        shouldStop: () -> Bool = { false }, each: (OperatorOutcome) -> Void = { _ in }
    ) throws -> BulkOutcome {
        enum Target {
            case named([String])
            case rows([Int64], OrderState)
        }
        let target: Target
        let count: Int
        switch request.target {
        case .orders(let ids):
            target = .named(ids)
            count = ids.count
        case .state(let state):
            let rows = try withConnection { connection in
                try connection.query(
                    "SELECT id FROM orders INDEXED BY orders_state_received WHERE state = ? ORDER BY received_at, id", [.text(state.rawValue)]
                ) { $0.int64(0) }
            }
            target = .rows(rows, state)
            count = rows.count
        }
        var outcome = BulkOutcome(matched: count)
        var start = 0
        while start < count {
            if shouldStop() {
                outcome.interrupted = true
                outcome.notReached = count - start
                break
            }
            let end = min(start + batchSize, count)
            let time = now()
            let batch = try write { connection -> (outcomes: [OperatorOutcome], skipped: Int) in
                switch target {
                case .named(let ids):
                    return (try ids[start..<end].map { try Self.operate($0, request, verifierKind: verifierKind, now: time, connection: connection) }, 0)
                case .rows(let rows, let state):
                    var outcomes: [OperatorOutcome] = []
                    var skipped = 0
                    for row in rows[start..<end] {
                        guard let orderID = try connection.queryFirst(
                            "SELECT order_id FROM orders WHERE id = ? AND state = ?", [.integer(row), .text(state.rawValue)], { $0.string(0) })
                        else {
                            skipped += 1
                            continue
                        }
                        outcomes.append(try Self.operate(orderID, request, verifierKind: verifierKind, now: time, connection: connection))
                    }
                    return (outcomes, skipped)
                }
            }
            outcome.skipped += batch.skipped
            for result in batch.outcomes {
                outcome.add(result, sampleSize: sampleSize)
                each(result)
            }
            start = end
        }
        return outcome
    }

    /// The row an operator action looks at.
    struct OperatorRow {
        var reference: Int64
        var state: OrderState
        var resumeState: OrderState?
        var proof: OrderProof
        var leased: Bool
        var reason: String?
        /// An action recorded while the order's attempt is in flight (JSON), if any.
        var pendingAction: String?
    }

    static func operatorRow(_ orderID: String, connection: SQLiteConnection) throws -> OperatorRow? {
        try connection.queryFirst(
            """
            SELECT id, state, resume_state, receipt, transaction_id, signed_transaction, lease_owner IS NOT NULL, reason,
                pending_action
            FROM orders WHERE order_id = ?
            """, [.text(orderID)]
        ) { row in
            OperatorRow(
                reference: row.int64(0), state: OrderState(rawValue: row.string(1)) ?? .held,
                resumeState: row.optionalString(2).flatMap(OrderState.init(rawValue:)),
                proof: OrderProof(receipt: row.optionalString(3), transactionID: row.optionalString(4), signedTransaction: row.optionalString(5)),
                leased: row.int(6) == 1, reason: row.optionalString(7), pendingAction: row.optionalString(8))
        }
    }

    private static func operate(
        _ orderID: String, _ request: OperatorRequest, verifierKind: VerifierKind?, now: Date, connection: SQLiteConnection
    ) throws -> OperatorOutcome {
        guard let row = try operatorRow(orderID, connection: connection) else {
            return OperatorOutcome(orderID: orderID, result: .notFound)
        }
        if row.leased {
            // The attempt in flight ends first; the completion applies the action (DESIGN §4).
            guard request.action != .release else {
                return OperatorOutcome(orderID: orderID, result: .refused("cannot release: the order is \(row.state) (an attempt is in flight), not held"))
            }
            // One action waits at a time: a second one would silently replace the first.
            if let waiting = row.pendingAction, case .object(let object)? = try? JSONParser().parse(waiting) {
                let earlier = object["action"]?.stringValue ?? "action"
                let by = object["actor"]?.stringValue ?? "an operator"
                return OperatorOutcome(
                    orderID: orderID,
                    result: .refused("an earlier \(earlier) by \(by) waits for the attempt in flight to end; try again once it has"))
            }
            try connection.run(
                "UPDATE orders SET pending_action = ? WHERE id = ?", [.text(pendingActionJSON(request, verifierKind: verifierKind)), .integer(row.reference)])
            try recordTransition(
                connection, orderRef: row.reference, at: now, actor: request.actor, from: row.state, to: row.state,
                reason: "\(request.action.rawValue)_requested",
                detail: ["applied when the attempt in flight ends", request.note].compactMap { $0 }.joined(separator: "; "))
            return OperatorOutcome(orderID: orderID, result: .deferred(state: row.state))
        }
        return try perform(request, on: row, orderID: orderID, verifierKind: verifierKind, now: now, connection: connection)
    }

    /// Applies an operator action to an order that is not leased.
    static func perform(
        _ request: OperatorRequest, on row: OperatorRow, orderID: String, verifierKind: VerifierKind?, now: Date, connection: SQLiteConnection
    ) throws -> OperatorOutcome {
        if request.action == .retry && row.state == .escalated && row.reason == "duplicate_transaction" && !request.force {
            let claimant = try connection.queryFirst(
                "SELECT detail FROM transitions WHERE order_ref = ? AND reason = 'duplicate_transaction' ORDER BY id DESC LIMIT 1",
                [.integer(row.reference)]) { $0.optionalString(0) } ?? nil
            return OperatorOutcome(
                orderID: orderID,
                result: .refused(
                    "the order was escalated as a duplicate (\(claimant ?? "its transaction is claimed by another order")); retry with --force to verify it again"))
        }
        let usable = verifierKind.map { row.proof.isUsable(by: $0) } ?? !row.proof.isEmpty
        let context = OrderLifecycle.Context(resumeState: row.resumeState, hasUsableProof: usable)
        let next: OrderState
        do {
            guard case .moveTo(let state) = try OrderLifecycle.next(from: row.state, on: .operatorAction(request.action), context: context) else {
                return OperatorOutcome(orderID: orderID, result: .refused("cannot \(request.action.rawValue): the order is \(row.state)"))
            }
            next = state
        } catch {
            return OperatorOutcome(orderID: orderID, result: .refused(error.description))
        }

        if request.action == .resolve, let transactionID = request.transactionID {
            if let holder = try connection.queryFirst(
                "SELECT o.order_id FROM claims c JOIN orders o ON o.id = c.order_ref WHERE c.transaction_id = ?",
                [.text(transactionID)], { $0.string(0) }), holder != orderID
            {
                return OperatorOutcome(orderID: orderID, result: .refused("transaction \(transactionID) is already claimed by order \(holder)"))
            }
            try connection.run(
                "INSERT OR IGNORE INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES (?, ?, ?, ?)",
                [.text(transactionID), .integer(row.reference), .integer(now.epochMilliseconds), .text(request.actor.description)])
        }

        let due = next == .pending || next == .verified
        // hold: remember the state it was in, and keep the order's resume state and reason aside;
        // release: put them back; anything else: neither.
        let hold = request.action == .hold ? 1 : 0
        let release = request.action == .release ? 1 : 0
        try connection.run(
            """
            UPDATE orders SET state = ?,
                resume_state = CASE WHEN ? THEN ? WHEN ? THEN held_resume_state ELSE NULL END,
                reason = CASE WHEN ? THEN COALESCE(held_reason, ?) ELSE ? END,
                held_resume_state = CASE WHEN ? THEN resume_state ELSE NULL END,
                held_reason = CASE WHEN ? THEN reason ELSE NULL END,
                next_attempt_at = ?, updated_at = ?, pending_action = NULL,
                finished_by = CASE WHEN ? THEN 'operator' ELSE finished_by END,
                verified_transaction_id = COALESCE(?, verified_transaction_id),
                attempts = CASE WHEN ? THEN 0 ELSE attempts END,
                delivery_attempts = CASE WHEN ? THEN 0 ELSE delivery_attempts END,
                malformed_answers = CASE WHEN ? THEN 0 ELSE malformed_answers END,
                received_at = CASE WHEN ? THEN ? ELSE received_at END
            WHERE id = ?
            """,
            [
                .text(next.rawValue),
                .integer(hold), .text(row.state.rawValue), .integer(release),
                .integer(release), .text(request.action.rawValue), .text(request.action.rawValue),
                .integer(hold), .integer(hold),
                due ? .integer(now.epochMilliseconds) : .null, .integer(now.epochMilliseconds), .integer(request.action == .resolve ? 1 : 0),
                .text(orNull: request.action == .resolve ? request.transactionID : nil),
                .integer(request.resetAttempts ? 1 : 0), .integer(request.resetAttempts ? 1 : 0), .integer(request.resetAttempts ? 1 : 0),
                .integer(request.resetAttempts ? 1 : 0), .integer(now.epochMilliseconds), .integer(row.reference),
            ])
        var detail = request.note
        if request.resetAttempts { detail = ["attempts and age reset", detail].compactMap { $0 }.joined(separator: "; ") }
        if let transactionID = request.transactionID, request.action == .resolve {
            detail = ["transaction \(transactionID) claimed", detail].compactMap { $0 }.joined(separator: "; ")
        }
        try recordTransition(
            connection, orderRef: row.reference, at: now, actor: request.actor, from: row.state, to: next,
            reason: request.action.rawValue, detail: detail)
        return OperatorOutcome(orderID: orderID, result: .applied(from: row.state, to: next))
    }

    // MARK: - Deferred actions

    static func pendingActionJSON(_ request: OperatorRequest, verifierKind: VerifierKind?) -> String {
        JSONWriter.string(.object(JSONObject([
            "action": .string(request.action.rawValue), "actor": .string(request.actor.description),
            "note": request.note.map(JSONValue.string), "reset_attempts": .bool(request.resetAttempts), "force": .bool(request.force),
            "transaction_id": request.transactionID.map(JSONValue.string), "kind": verifierKind.map { .string($0.rawValue) },
        ])))
    }

    /// Applies the operator action recorded while the order's attempt was in flight, if any
    /// (called inside the transaction that ends the lease).
    static func applyPendingAction(
        orderRef: Int64, orderID: String, now: Date, connection: SQLiteConnection
    ) throws -> (request: OperatorRequest, outcome: OperatorOutcome)? {
        guard let text = try connection.queryFirst("SELECT pending_action FROM orders WHERE id = ?", [.integer(orderRef)], { $0.optionalString(0) }) ?? nil,
            case .object(let object)? = try? JSONParser().parse(text),
            let action = object["action"]?.stringValue.flatMap(OperatorAction.init(rawValue:)),
            let actor = object["actor"]?.stringValue.flatMap(TransitionActor.init)
        else { return nil }
        try connection.run("UPDATE orders SET pending_action = NULL WHERE id = ?", [.integer(orderRef)])
        let request = OperatorRequest(
            action: action, target: .orders([orderID]), actor: actor, note: object["note"]?.stringValue,
            resetAttempts: object["reset_attempts"]?.boolValue ?? false, force: object["force"]?.boolValue ?? false,
            transactionID: object["transaction_id"]?.stringValue)
        guard let row = try operatorRow(orderID, connection: connection) else { return nil }
        let outcome = try perform(
            request, on: row, orderID: orderID, verifierKind: object["kind"]?.stringValue.flatMap(VerifierKind.init(rawValue:)), now: now,
            connection: connection)
        if case .refused(let reason) = outcome.result {
            try recordTransition(
                connection, orderRef: orderRef, at: now, actor: actor, from: row.state, to: row.state,
                reason: "\(action.rawValue)_not_applied", detail: "after the attempt: \(reason)")
        }
        return (request, outcome)
    }
}
