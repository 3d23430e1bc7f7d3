import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    public func ingest(_ candidates: [IngestCandidate], verifierKind: VerifierKind, now: Date) throws -> [IngestOutcome] {
        guard !candidates.isEmpty else { return [] }
        return try write { connection in
            try candidates.map { try Self.ingest($0, verifierKind: verifierKind, now: now, connection: connection) }
        }
    }

    /// The stored fields the ingest rules compare against.
    private struct Existing {
        var ref: Int64
        var productID: String
        var state: OrderState
        var resumeState: OrderState?
        var contentHash: String
        var proof: OrderProof
    }

    private static func ingest(
        _ candidate: IngestCandidate, verifierKind: VerifierKind, now: Date, connection: SQLiteConnection
    ) throws -> IngestOutcome {
        let submission = candidate.submission
        let existing = try connection.queryFirst(
            """
            SELECT id, product_id, state, resume_state, content_hash, receipt, transaction_id, signed_transaction
            FROM orders WHERE order_id = ?
            """, [.text(submission.orderID)]
        ) { row in
            Existing(
                ref: row.int64(0), productID: row.string(1), state: OrderState(rawValue: row.string(2)) ?? .held,
                resumeState: row.optionalString(3).flatMap(OrderState.init(rawValue:)), contentHash: row.string(4),
                proof: OrderProof(
                    receipt: row.optionalString(5), transactionID: row.optionalString(6),
                    signedTransaction: row.optionalString(7)))
        }
        guard let existing else {
            return try insert(candidate, verifierKind: verifierKind, now: now, connection: connection)
        }
        if existing.contentHash == candidate.contentHash {
            return .unchanged
        }
        if existing.productID != submission.productID {
            return .conflict(
                OrderFileProblem(
                    .conflictingProduct,
                    "order \(submission.orderID) is stored with product_id \(OrderFileParser.quoted(existing.productID)), this file says \(OrderFileParser.quoted(submission.productID))"
                ))
        }
        if existing.state.isTerminal {
            let why = "the order is \(existing.state); a later file changes nothing"
            try recordTransition(
                connection, orderRef: existing.ref, at: now, actor: .daemon, from: existing.state, to: existing.state,
                reason: "duplicate_ignored", detail: "\(why) (spool file \(candidate.fileName))")
            return .duplicateIgnored(state: existing.state, why: why)
        }

        // New proof fields overwrite; fields the new file leaves out keep their stored value, so
        // a later file can never take proof away.
        let merged = OrderProof(
            receipt: submission.proof.receipt ?? existing.proof.receipt,
            transactionID: submission.proof.transactionID ?? existing.proof.transactionID,
            signedTransaction: submission.proof.signedTransaction ?? existing.proof.signedTransaction)
        guard !submission.proof.isEmpty, merged != existing.proof else {
            let why = "no new proof"
            try recordTransition(
                connection, orderRef: existing.ref, at: now, actor: .daemon, from: existing.state, to: existing.state,
                reason: "duplicate_ignored", detail: "\(why) (spool file \(candidate.fileName))")
            return .duplicateIgnored(state: existing.state, why: why)
        }

        // The order's new state: "proof arrives" when the verifier can use the proof; otherwise
        // the proof is kept and the state stays.
        var newState = existing.state
        var newResume = existing.resumeState
        var dueNow = false
        if merged.isUsable(by: verifierKind) {
            switch existing.state {
            case .verified:
                break  // granted already: the proof is kept, delivery goes on
            case .held:
                if let resume = existing.resumeState,
                    case .moveTo(let next)? = try? OrderLifecycle.next(from: resume, on: .proofArrived)
                {
                    newResume = next
                }
            default:
                if case .moveTo(let next) = try OrderLifecycle.next(from: existing.state, on: .proofArrived) {
                    newState = next
                    dueNow = next == .pending
                    if existing.state.isDormant { newResume = nil }
                }
            }
        }
        // A held order whose proof revives the state it was held in (escalated → pending): what
        // was kept aside for its release no longer applies, as it would not for an order not held.
        let heldResumeMoved = existing.state == .held && newResume != existing.resumeState
        try connection.run(
            """
            UPDATE orders SET
                receipt = ?, transaction_id = ?, signed_transaction = ?, application_username = ?, user_id = ?,
                amount = ?, currency = ?, created_at = ?, raw = ?, content_hash = ?,
                proof_revision = proof_revision + 1, state = ?, resume_state = ?, updated_at = ?,
                next_attempt_at = CASE WHEN ? THEN ? ELSE next_attempt_at END,
                reason = CASE WHEN state = ? THEN reason ELSE 'proof_replaced' END,
                held_resume_state = CASE WHEN ? THEN NULL ELSE held_resume_state END,
                held_reason = CASE WHEN ? THEN 'proof_replaced' ELSE held_reason END
            WHERE id = ?
            """,
            [
                .text(orNull: merged.receipt), .text(orNull: merged.transactionID), .text(orNull: merged.signedTransaction),
                .text(orNull: submission.applicationUsername), .text(orNull: submission.userID),
                .text(orNull: submission.amount), .text(orNull: submission.currency),
                .integer(orNull: submission.createdAt.map { min($0, now).epochMilliseconds }), .blob(candidate.raw),
                .text(candidate.contentHash), .text(newState.rawValue), .text(orNull: newResume?.rawValue),
                .integer(now.epochMilliseconds), .integer(dueNow ? 1 : 0), .integer(now.epochMilliseconds),
                .text(newState.rawValue), .integer(heldResumeMoved ? 1 : 0), .integer(heldResumeMoved ? 1 : 0), .integer(existing.ref),
            ])
        try recordTransition(
            connection, orderRef: existing.ref, at: now, actor: .daemon, from: existing.state, to: newState,
            reason: "proof_replaced", detail: "new proof from spool file \(candidate.fileName)")
        return .proofReplaced(from: existing.state, to: newState)
    }

    private static func insert(
        _ candidate: IngestCandidate, verifierKind: VerifierKind, now: Date, connection: SQLiteConnection
    ) throws -> IngestOutcome {
        let submission = candidate.submission
        let usable = submission.proof.isUsable(by: verifierKind)
        let state: OrderState = usable ? .pending : .waiting
        try connection.run(
            """
            INSERT INTO orders (
                order_id, product_id, state, receipt, transaction_id, signed_transaction, application_username,
                user_id, amount, currency, created_at, raw, content_hash, received_at, updated_at, next_attempt_at,
                reason)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [
                .text(submission.orderID), .text(submission.productID), .text(state.rawValue),
                .text(orNull: submission.proof.receipt), .text(orNull: submission.proof.transactionID),
                .text(orNull: submission.proof.signedTransaction), .text(orNull: submission.applicationUsername),
                .text(orNull: submission.userID), .text(orNull: submission.amount), .text(orNull: submission.currency),
                .integer(orNull: submission.createdAt.map { min($0, now).epochMilliseconds }), .blob(candidate.raw),
                .text(candidate.contentHash), .integer(now.epochMilliseconds), .integer(now.epochMilliseconds),
                usable ? .integer(now.epochMilliseconds) : .null, .text(usable ? "ingested" : "no_usable_proof"),
            ])
        try recordTransition(
            connection, orderRef: connection.lastInsertRowID, at: now, actor: .daemon, from: nil, to: state,
            reason: usable ? "ingested" : "no_usable_proof",
            detail: usable
                ? "from spool file \(candidate.fileName)"
                : "from spool file \(candidate.fileName); Kind=\(verifierKind.rawValue) cannot verify the proof it carries")
        return .accepted(state)
    }
}
