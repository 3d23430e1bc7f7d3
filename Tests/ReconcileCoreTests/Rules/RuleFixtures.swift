import Foundation
@testable import ReconcileCore

/// Lookups from dictionaries: claims (transaction → order id) and history details.
struct FixedLookups: RuleLookups {
    var claims: [String: String] = [:]
    var details: [ReasonCode: String] = [:]
    var failing = false
    var actions: [OutboxAction] = []

    struct Failure: Error {}

    func claimants(of transactionIDs: [String]) throws -> [String: String] {
        if failing { throw Failure() }
        return claims.filter { transactionIDs.contains($0.key) }
    }

    /// Purchases that became orders after a store reported them: transaction key → order id.
    var discovered: [String: String] = [:]

    func discoveredOrders(of transactionKeys: [String]) throws -> [String: String] {
        if failing { throw Failure() }
        return discovered.filter { transactionKeys.contains($0.key) }
    }

    func latestDetail(orderReference: Int64, reason: ReasonCode) throws -> String? {
        details[reason]
    }

    /// Store events taken in: transaction id → (type, when the store signed it).
    var storeEvents: [String: [(type: String, signedAt: Date)]] = [:]
    /// Orders (by reference) a delivery request went out for.
    var deliveryRequests: Set<Int64> = []

    func laterStoreEvent(transactionID: String, signedAfter date: Date) throws -> String? {
        storeEvents[transactionID, default: []].filter { $0.signedAt > date }.max { $0.signedAt < $1.signedAt }?.type
    }

    func revocationNotices(orderReference: Int64) throws -> [OutboxAction] {
        actions.filter { $0.orderReference == orderReference && $0.kind == .revocationNotice }
    }

    func deliveryRequested(orderReference: Int64) throws -> Bool {
        deliveryRequests.contains(orderReference)
    }

    func escalatedActions(orderReference: Int64) throws -> [OutboxAction] {
        actions.filter { $0.orderReference == orderReference && $0.state == .escalated }
    }
}

/// Records and completions for the rule tests.
enum RuleFixtures {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    static let now = t0.addingTimeInterval(600)
    static let owner = "host-a:1:x"

    static func record(
        _ state: OrderState, id: String = "A1", proof: OrderProof = OrderProof(receipt: "QUJD"), attempts: Int = 1,
        leased: Bool = false, leaseRevision: Int64? = nil, proofRevision: Int64 = 1, reason: ReasonCode? = nil,
        resume: OrderState? = nil
    ) -> OrderRecord {
        OrderRecord(
            reference: 7, orderID: id, productID: "gems", state: state, resumeState: resume, reason: reason, proof: proof,
            proofRevision: proofRevision, contentHash: "h1", receivedAt: t0, updatedAt: t0, attempts: attempts,
            lease: leased ? OrderRecord.Lease(owner: owner, until: now.addingTimeInterval(120), proofRevision: leaseRevision ?? proofRevision) : nil)
    }

    static func claimed(_ record: OrderRecord, kind: WorkKind = .verify, charged: Bool = true) -> ClaimedOrder {
        ClaimedOrder(
            reference: record.reference, orderID: record.orderID, productID: record.productID, kind: kind, proof: record.proof,
            receivedAt: record.receivedAt, attempt: record.attempts(kind), charged: charged, grant: record.grant,
            proofRevision: record.lease?.proofRevision ?? 1)
    }

    static func request(endpoint: VerificationEndpoint = .production) -> AttemptRecord {
        AttemptRecord(endpoint: endpoint, httpStatus: 200, verifierStatus: 0, latency: .milliseconds(40), outcome: .answered, startedAt: now)
    }

    static func completion(
        _ record: OrderRecord, _ resolution: AttemptCompletion.Resolution, kind: WorkKind = .verify, charged: Bool = true,
        claimCharged: Bool = true, requests: Int = 1
    ) -> AttemptCompletion {
        AttemptCompletion(
            order: claimed(record, kind: kind, charged: claimCharged), records: Array(repeating: request(), count: requests),
            resolution: resolution, charged: charged)
    }

    static func item(_ transaction: String, product: String = "gems") -> AppleReceiptItem {
        AppleReceiptItem(productID: product, transactionID: transaction, originalTransactionID: transaction, purchaseDateMilliseconds: 1)
    }
}
