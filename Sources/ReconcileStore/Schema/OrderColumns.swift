import Foundation
import ReconcileCore

/// The `orders` columns every store reads into an ``OrderRecord`` and writes from an
/// ``OrderPlan``, in one place so that the stores cannot drift apart: the select list, the reader
/// that maps its positions, and the columns a plan sets with their values in order.
enum OrderColumns {
    /// The select list ``record(from:)`` reads, by position.
    static let record = """
        id, order_id, product_id, state, resume_state, held_resume_state, held_reason, reason, receipt, transaction_id,
        signed_transaction, proof_revision, application_username, user_id, amount, currency, created_at, content_hash,
        received_at, updated_at, next_attempt_at, attempts, delivery_attempts, malformed_answers, lease_owner, leased_until,
        lease_proof_revision, pending_action, verified_transaction_id, original_transaction_id, verified_product_id, quantity,
        purchase_date, environment, finished_by, pruned_at, purchase_token, package_name, acknowledgement_state, consumption_state
        """

    /// An order's record from a row selected with ``record``.
    static func record(from row: some StoreRow) -> OrderRecord {
        func state(_ index: Int32) -> OrderState? { row.optionalString(index).flatMap(OrderState.init(rawValue:)) }
        func date(_ index: Int32) -> Date? { row.optionalInt64(index).map(Date.init(epochMilliseconds:)) }
        let orderID = row.string(1)
        let grant: Grant? = (Array(28...33) + [38, 39]).allSatisfy { row.isNull(Int32($0)) }
            ? nil
            : Grant(
                transactionID: row.optionalString(28), originalTransactionID: row.optionalString(29), productID: row.optionalString(30),
                quantity: row.optionalInt64(31).map(Int.init), purchaseDateMilliseconds: row.optionalInt64(32), environment: row.optionalString(33),
                acknowledgementState: row.optionalInt64(38).map(Int.init), consumptionState: row.optionalInt64(39).map(Int.init))
        return OrderRecord(
            reference: row.int64(0), orderID: orderID, productID: row.string(2), state: state(3) ?? .held, resumeState: state(4),
            heldResumeState: state(5), heldReason: row.optionalString(6), reason: row.optionalString(7),
            proof: OrderProof(
                receipt: row.optionalString(8), transactionID: row.optionalString(9), signedTransaction: row.optionalString(10),
                purchaseToken: row.optionalString(36), packageName: row.optionalString(37)),
            proofRevision: row.int64(11), applicationUsername: row.optionalString(12), userID: row.optionalString(13),
            amount: row.optionalString(14), currency: row.optionalString(15), createdAt: date(16), contentHash: row.string(17),
            receivedAt: date(18) ?? .distantPast, updatedAt: date(19) ?? .distantPast, nextAttemptAt: date(20), attempts: row.int(21),
            deliveryAttempts: row.int(22), malformedAnswers: row.int(23),
            lease: row.optionalString(24).map { OrderRecord.Lease(owner: $0, until: date(25), proofRevision: row.optionalInt64(26)) },
            deferredAction: row.optionalString(27).flatMap { DeferredAction(storedForm: $0, orderID: orderID) },
            grant: grant, finishedBy: row.optionalString(34).flatMap(Finisher.init(rawValue:)), prunedAt: date(35))
    }

    /// The columns a plan sets, in the order of ``planValues(_:)``.
    static let plan = [
        "state", "resume_state", "held_resume_state", "held_reason", "reason", "receipt", "transaction_id", "signed_transaction",
        "proof_revision", "application_username", "user_id", "amount", "currency", "created_at", "content_hash", "received_at",
        "updated_at", "next_attempt_at", "attempts", "delivery_attempts", "malformed_answers", "lease_owner", "leased_until",
        "lease_proof_revision", "pending_action", "verified_transaction_id", "original_transaction_id", "verified_product_id", "quantity",
        "purchase_date", "environment", "finished_by", "purchase_token", "package_name", "acknowledgement_state", "consumption_state",
    ]

    /// The values of ``plan`` for `record`.
    static func planValues(_ record: OrderRecord) -> [ColumnValue] {
        let grant = record.grant
        return [
            .text(record.state.rawValue), .text(orNull: record.resumeState?.rawValue), .text(orNull: record.heldResumeState?.rawValue),
            .text(orNull: record.heldReason), .text(orNull: record.reason), .text(orNull: record.proof.receipt),
            .text(orNull: record.proof.transactionID), .text(orNull: record.proof.signedTransaction), .integer(record.proofRevision),
            .text(orNull: record.applicationUsername), .text(orNull: record.userID), .text(orNull: record.amount),
            .text(orNull: record.currency), .integer(orNull: record.createdAt?.epochMilliseconds), .text(record.contentHash),
            .integer(record.receivedAt.epochMilliseconds), .integer(record.updatedAt.epochMilliseconds),
            .integer(orNull: record.nextAttemptAt?.epochMilliseconds), .integer(Int64(record.attempts)), .integer(Int64(record.deliveryAttempts)),
            .integer(Int64(record.malformedAnswers)), .text(orNull: record.lease?.owner), .integer(orNull: record.lease?.until?.epochMilliseconds),
            .integer(orNull: record.lease?.proofRevision), .text(orNull: record.deferredAction?.storedForm),
            .text(orNull: grant?.transactionID), .text(orNull: grant?.originalTransactionID), .text(orNull: grant?.productID),
            .integer(orNull: grant?.quantity.map(Int64.init)), .integer(orNull: grant?.purchaseDateMilliseconds), .text(orNull: grant?.environment),
            .text(orNull: record.finishedBy?.rawValue), .text(orNull: record.proof.purchaseToken), .text(orNull: record.proof.packageName),
            .integer(orNull: grant?.acknowledgementState.map(Int64.init)), .integer(orNull: grant?.consumptionState.map(Int64.init)),
        ]
    }
}
