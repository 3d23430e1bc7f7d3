import Foundation
import ReconcileCore

/// An order's columns, declared once: the select list ``OrderColumns/record`` is made from this
/// declaration, and rows are read by column (the raw value is the position in it). All live in
/// `orders` (alias `o`) but the proof an order was taken in with, which lives apart in
/// `order_proofs` (alias `p`, schema 10), so that the rows each claim and outcome rewrites stay
/// narrow.
package enum OrderColumn: Int32, SQLColumn {
    case id, orderID, productID, state, resumeState, heldResumeState, heldReason, reason, receipt, transactionID
    case signedTransaction, proofRevision, applicationUsername, userID, amount, currency, createdAt, contentHash
    case receivedAt, updatedAt, nextAttemptAt, attempts, deliveryAttempts, malformedAnswers, leaseOwner, leasedUntil
    case leaseProofRevision, pendingAction, verifiedTransactionID, originalTransactionID, verifiedProductID, quantity
    case purchaseDate, environment, finishedBy, prunedAt, purchaseToken, packageName, acknowledgementState, consumptionState
    case origin

    package var name: String {
        switch self {
        case .id: "id"
        case .orderID: "order_id"
        case .productID: "product_id"
        case .state: "state"
        case .resumeState: "resume_state"
        case .heldResumeState: "held_resume_state"
        case .heldReason: "held_reason"
        case .reason: "reason"
        case .receipt: "receipt"
        case .transactionID: "transaction_id"
        case .signedTransaction: "signed_transaction"
        case .proofRevision: "proof_revision"
        case .applicationUsername: "application_username"
        case .userID: "user_id"
        case .amount: "amount"
        case .currency: "currency"
        case .createdAt: "created_at"
        case .contentHash: "content_hash"
        case .receivedAt: "received_at"
        case .updatedAt: "updated_at"
        case .nextAttemptAt: "next_attempt_at"
        case .attempts: "attempts"
        case .deliveryAttempts: "delivery_attempts"
        case .malformedAnswers: "malformed_answers"
        case .leaseOwner: "lease_owner"
        case .leasedUntil: "leased_until"
        case .leaseProofRevision: "lease_proof_revision"
        case .pendingAction: "pending_action"
        case .verifiedTransactionID: "verified_transaction_id"
        case .originalTransactionID: "original_transaction_id"
        case .verifiedProductID: "verified_product_id"
        case .quantity: "quantity"
        case .purchaseDate: "purchase_date"
        case .environment: "environment"
        case .finishedBy: "finished_by"
        case .prunedAt: "pruned_at"
        case .purchaseToken: "purchase_token"
        case .packageName: "package_name"
        case .acknowledgementState: "acknowledgement_state"
        case .consumptionState: "consumption_state"
        case .origin: "origin"
        }
    }

    /// The column's type in a multi-row statement's arrays (``SQLBatch/unnest(into:columns:key:suffix:)``):
    /// `bigint` for times, counts and keys (an `integer` column takes them by assignment),
    /// `text` for the rest. The contract tests hold it to the PostgreSQL schema.
    package var arrayType: String {
        switch self {
        case .id, .proofRevision, .createdAt, .receivedAt, .updatedAt, .nextAttemptAt, .attempts, .deliveryAttempts, .malformedAnswers,
            .leasedUntil, .leaseProofRevision, .quantity, .purchaseDate, .prunedAt, .acknowledgementState, .consumptionState:
            "bigint"
        case .orderID, .productID, .state, .resumeState, .heldResumeState, .heldReason, .reason, .receipt, .transactionID,
            .signedTransaction, .applicationUsername, .userID, .amount, .currency, .contentHash, .leaseOwner, .pendingAction,
            .verifiedTransactionID, .originalTransactionID, .verifiedProductID, .environment, .finishedBy, .purchaseToken, .packageName,
            .origin:
            "text"
        }
    }

    /// Whether the column lives in `order_proofs` (written once at ingest, and with new proof).
    package var isProof: Bool { self == .receipt || self == .signedTransaction }

    /// The column as the record's select list names it.
    package var qualifiedName: String { (isProof ? "p." : "o.") + name }
}

/// How an ``OrderRecord`` is read from an `orders` row and written from an ``OrderPlan``, in one
/// place for both engines.
package enum OrderColumns {
    /// The select list ``record(from:)`` reads: every ``OrderColumn``, from ``from(indexedBy:)``.
    package static let record = OrderColumn.allCases.map(\.qualifiedName).joined(separator: ", ")

    /// `FROM orders o LEFT JOIN order_proofs p …`, the orders' scan pinned to `index` on SQLite.
    /// Rows locked for a change are locked with `FOR UPDATE OF o` (the proofs are written only
    /// with their order's row locked).
    package static func from(indexedBy index: String? = nil) -> SQLStatement {
        guard let index else { return "FROM orders AS o LEFT JOIN order_proofs AS p ON p.order_ref = o.id" }
        return "FROM orders AS o \(.indexedBy(index)) LEFT JOIN order_proofs AS p ON p.order_ref = o.id"
    }

    /// `SELECT <record> FROM orders o LEFT JOIN order_proofs p …`.
    package static func select(indexedBy index: String? = nil) -> SQLStatement {
        "SELECT \(raw: record) \(from(indexedBy: index))"
    }

    /// The columns of the grant (all NULL: no grant).
    private static let grantColumns: [OrderColumn] = [
        .verifiedTransactionID, .originalTransactionID, .verifiedProductID, .quantity, .purchaseDate, .environment, .acknowledgementState,
        .consumptionState,
    ]

    /// An order's record from a row selected with ``record``.
    ///
    /// - Throws: ``StoreError/unknownValue(table:column:value:)`` for a state, finisher or
    ///   deferred action this version does not know.
    package static func record(from row: some StoreRow) throws -> OrderRecord {
        func state(_ column: OrderColumn) throws -> OrderState? { try row.optionalKnown(column, as: OrderState.self, table: "orders") }
        let orderID = row.string(OrderColumn.orderID)
        let grant: Grant? = grantColumns.allSatisfy { row.isNull($0) }
            ? nil
            : Grant(
                transactionID: row.optionalString(OrderColumn.verifiedTransactionID),
                originalTransactionID: row.optionalString(OrderColumn.originalTransactionID),
                productID: row.optionalString(OrderColumn.verifiedProductID), quantity: row.optionalInt(OrderColumn.quantity),
                purchaseDateMilliseconds: row.optionalInt64(OrderColumn.purchaseDate), environment: row.optionalString(OrderColumn.environment),
                acknowledgementState: row.optionalInt(OrderColumn.acknowledgementState),
                consumptionState: row.optionalInt(OrderColumn.consumptionState))
        var deferredAction: DeferredAction?
        if let stored = row.optionalString(OrderColumn.pendingAction) {
            guard let action = DeferredAction(storedForm: stored, orderID: orderID) else {
                throw StoreError.unknownValue(table: "orders", column: OrderColumn.pendingAction.name, value: stored)
            }
            deferredAction = action
        }
        return OrderRecord(
            reference: row.int64(OrderColumn.id), orderID: orderID, productID: row.string(OrderColumn.productID),
            state: try row.known(OrderColumn.state, as: OrderState.self, table: "orders"), resumeState: try state(.resumeState),
            heldResumeState: try state(.heldResumeState), heldReason: row.optionalString(OrderColumn.heldReason).map(ReasonCode.init(rawValue:)),
            reason: row.optionalString(OrderColumn.reason).map(ReasonCode.init(rawValue:)),
            proof: OrderProof(
                receipt: row.optionalString(OrderColumn.receipt), transactionID: row.optionalString(OrderColumn.transactionID),
                signedTransaction: row.optionalString(OrderColumn.signedTransaction), purchaseToken: row.optionalString(OrderColumn.purchaseToken),
                packageName: row.optionalString(OrderColumn.packageName)),
            proofRevision: row.int64(OrderColumn.proofRevision), applicationUsername: row.optionalString(OrderColumn.applicationUsername),
            userID: row.optionalString(OrderColumn.userID), amount: row.optionalString(OrderColumn.amount),
            currency: row.optionalString(OrderColumn.currency), createdAt: row.date(OrderColumn.createdAt),
            contentHash: row.string(OrderColumn.contentHash), receivedAt: row.date(OrderColumn.receivedAt) ?? .distantPast,
            updatedAt: row.date(OrderColumn.updatedAt) ?? .distantPast, nextAttemptAt: row.date(OrderColumn.nextAttemptAt),
            attempts: row.int(OrderColumn.attempts), deliveryAttempts: row.int(OrderColumn.deliveryAttempts),
            malformedAnswers: row.int(OrderColumn.malformedAnswers),
            lease: row.optionalString(OrderColumn.leaseOwner).map {
                OrderRecord.Lease(owner: $0, until: row.date(OrderColumn.leasedUntil), proofRevision: row.optionalInt64(OrderColumn.leaseProofRevision))
            },
            deferredAction: deferredAction, grant: grant,
            finishedBy: try row.optionalKnown(OrderColumn.finishedBy, as: Finisher.self, table: "orders"),
            prunedAt: row.date(OrderColumn.prunedAt), origin: try row.optionalKnown(OrderColumn.origin, as: OrderOrigin.self, table: "orders"))
    }

    /// The columns a plan sets in `orders`, in the order of ``planValues(_:)``: all but the key,
    /// the order id, the product, the pruning time and the proof.
    package static let plan: [OrderColumn] = OrderColumn.allCases.filter { ![.id, .orderID, .productID, .prunedAt].contains($0) && !$0.isProof }

    /// The columns a plan sets in `order_proofs`.
    package static let proof: [OrderColumn] = [.receipt, .signedTransaction]

    /// The names of ``plan``.
    package static let planNames = plan.map(\.name)

    /// `INSERT INTO orders (order_id, product_id, <plan>) VALUES (`.
    package static let insertPrefix = "INSERT INTO orders (\((["order_id", "product_id"] + planNames).joined(separator: ", "))) VALUES ("

    /// The values of ``plan`` for `record`.
    package static func planValues(_ record: OrderRecord) -> [SQLValue] {
        plan.map { value(of: $0, in: record) }
    }

    /// The columns of `columns` whose values differ between two records of one order.
    package static func changed(_ columns: [OrderColumn], from before: OrderRecord, to after: OrderRecord) -> [OrderColumn] {
        columns.filter { value(of: $0, in: before) != value(of: $0, in: after) }
    }

    /// One column's value for `record`.
    package static func value(of column: OrderColumn, in record: OrderRecord) -> SQLValue {
        let grant = record.grant
        switch column {
        case .id: return .integer(record.reference)
        case .orderID: return .text(record.orderID)
        case .productID: return .text(record.productID)
        case .state: return .text(record.state.rawValue)
        case .resumeState: return .text(orNull: record.resumeState?.rawValue)
        case .heldResumeState: return .text(orNull: record.heldResumeState?.rawValue)
        case .heldReason: return .text(orNull: record.heldReason?.rawValue)
        case .reason: return .text(orNull: record.reason?.rawValue)
        case .receipt: return .text(orNull: record.proof.receipt)
        case .transactionID: return .text(orNull: record.proof.transactionID)
        case .signedTransaction: return .text(orNull: record.proof.signedTransaction)
        case .proofRevision: return .integer(record.proofRevision)
        case .applicationUsername: return .text(orNull: record.applicationUsername)
        case .userID: return .text(orNull: record.userID)
        case .amount: return .text(orNull: record.amount)
        case .currency: return .text(orNull: record.currency)
        case .createdAt: return .time(record.createdAt)
        case .contentHash: return .text(record.contentHash)
        case .receivedAt: return .time(record.receivedAt)
        case .updatedAt: return .time(record.updatedAt)
        case .nextAttemptAt: return .time(record.nextAttemptAt)
        case .attempts: return .integer(record.attempts)
        case .deliveryAttempts: return .integer(record.deliveryAttempts)
        case .malformedAnswers: return .integer(record.malformedAnswers)
        case .leaseOwner: return .text(orNull: record.lease?.owner)
        case .leasedUntil: return .time(record.lease?.until)
        case .leaseProofRevision: return .integer(orNull: record.lease?.proofRevision)
        case .pendingAction: return .text(orNull: record.deferredAction?.storedForm)
        case .verifiedTransactionID: return .text(orNull: grant?.transactionID)
        case .originalTransactionID: return .text(orNull: grant?.originalTransactionID)
        case .verifiedProductID: return .text(orNull: grant?.productID)
        case .quantity: return .integer(orNull: grant?.quantity.map(Int64.init))
        case .purchaseDate: return .integer(orNull: grant?.purchaseDateMilliseconds)
        case .environment: return .text(orNull: grant?.environment)
        case .finishedBy: return .text(orNull: record.finishedBy?.rawValue)
        case .prunedAt: return .time(record.prunedAt)
        case .purchaseToken: return .text(orNull: record.proof.purchaseToken)
        case .packageName: return .text(orNull: record.proof.packageName)
        case .acknowledgementState: return .integer(orNull: grant?.acknowledgementState.map(Int64.init))
        case .consumptionState: return .integer(orNull: grant?.consumptionState.map(Int64.init))
        case .origin: return .text(orNull: record.origin?.rawValue)
        }
    }
}
