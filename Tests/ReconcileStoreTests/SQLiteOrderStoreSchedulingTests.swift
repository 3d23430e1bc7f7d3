import Foundation
import Testing
import ReconcileCore
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

@Suite("Store: leases, attempts and completions")
struct SQLiteOrderStoreSchedulingTests {
    let fixture = StoreFixture()
    let owner = "host:1:abc"

    func claim(_ store: SQLiteOrderStore, _ kind: WorkKind = .verify, at time: Date = t0, limit: Int = 10, charge: Bool = true) throws -> [ClaimedOrder] {
        try store.claimDue(kind, now: time, limit: limit, owner: owner, leaseUntil: time + 60, charge: charge)
    }

    func record(_ endpoint: VerificationEndpoint = .production, status: Int? = 0) -> AttemptRecord {
        AttemptRecord(endpoint: endpoint, environment: "Production", httpStatus: 200, verifierStatus: status, latency: .milliseconds(12), outcome: .answered, startedAt: t0)
    }

    @Test("claiming leases due orders, earliest first, charges the attempt and records pending → verifying")
    func claims() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3"), candidate("W", receipt: nil)], verifierKind: .apple, now: t0)
        try store.force("A1", to: .pending, nextAttempt: t0 + 20)
        try store.force("A2", to: .pending, nextAttempt: t0 + 10)
        let first = try claim(store, at: t0 + 15)
        #expect(first.map(\.orderID) == ["A3", "A2"])
        #expect(first.allSatisfy { $0.attempt == 1 && $0.charged })
        #expect(try store.order(id: "A2")?.state == .verifying)
        #expect(try store.order(id: "A2")?.leaseOwner == owner)
        #expect(try store.order(id: "A2")?.nextAttemptAt == nil)
        #expect(try store.history(orderID: "A2").last?.reason == "attempt")
        #expect(try claim(store, at: t0 + 15).isEmpty)
        #expect(try store.nextDueTime(.verify) == t0 + 20)
        #expect(try claim(store, at: t0 + 30, charge: false).map { ($0.orderID, $0.attempt, $0.charged) }.first! == ("A1", 0, false))
        #expect(try store.order(id: "A1")?.attempts == 0)
    }

    @Test("a transient failure goes back to pending at the retry time, with the attempt in the history")
    func transient() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        var failed = record(status: 21005)
        failed.outcome = .transient
        let results = try store.complete(
            [AttemptCompletion(order: order, records: [failed], resolution: .retry(at: t0 + 30, reason: Reason(.apple(21005))), charged: true)],
            owner: owner, now: t0 + 1)
        #expect(results.first?.to == .pending)
        let stored = try #require(try store.order(id: "A1"))
        #expect(stored.state == .pending)
        #expect(stored.nextAttemptAt == t0 + 30)
        #expect(stored.attempts == 1)
        #expect(stored.leaseOwner == nil)
        let last = try #require(try store.history(orderID: "A1").last)
        #expect(last.from == .verifying && last.to == .pending)
        #expect(last.reason == "apple_21005")
        #expect(last.verifierStatus == 21005)
        #expect(last.httpStatus == 200)
        #expect(last.endpoint == "production")
        #expect(last.latencyMilliseconds == 12)
    }

    @Test("an uncharged completion refunds the attempt (a configuration error, a probe)")
    func refund() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        _ = try store.complete(
            [AttemptCompletion(order: order, records: [record(status: 21004)], resolution: .retry(at: t0 + 5, reason: Reason(.apple(21004))), charged: false)],
            owner: owner, now: t0)
        #expect(try store.order(id: "A1")?.attempts == 0)
    }

    @Test("a match claims the transaction; a second order for the same purchase is escalated naming the first")
    func matchAndDuplicate() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("B2")], verifierKind: .apple, now: t0)
        let orders = try claim(store)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "1000", purchaseDateMilliseconds: t0.epochMilliseconds)]
        let results = try store.complete(
            orders.map { AttemptCompletion(order: $0, records: [record()], resolution: .match(items: items, environment: "Production", finishes: true), charged: true) },
            owner: owner, now: t0 + 1)
        #expect(results.map(\.to) == [.finished, .escalated])
        #expect(results[1].reason.code == .duplicateTransaction)
        #expect(results[1].reason.detail == "transaction 1000 is claimed by order A1")
        let finished = try #require(try store.order(id: "A1"))
        #expect(finished.finishedBy == .verifier)
        #expect(finished.verifiedTransactionID == "1000")
        #expect(finished.environment == "Production")
        #expect(try store.scalar("SELECT count(*) FROM claims") == 1)
    }

    @Test("match outcomes: refunded rejects, nothing matching escalates")
    func matchOutcomes() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("B2")], verifierKind: .apple, now: t0)
        let orders = try claim(store)
        let refunded = [AppleReceiptItem(productID: "gems", transactionID: "1", cancellationDateMilliseconds: 5)]
        let other = [AppleReceiptItem(productID: "coins", transactionID: "2")]
        let results = try store.complete([
            AttemptCompletion(order: orders[0], records: [record()], resolution: .match(items: refunded, environment: nil, finishes: true), charged: true),
            AttemptCompletion(order: orders[1], records: [record()], resolution: .match(items: other, environment: nil, finishes: true), charged: true),
        ], owner: owner, now: t0)
        #expect(results.map(\.to) == [.rejected, .escalated])
        #expect(results.map(\.reason.code) == [.refunded, .noMatchingPurchase])
    }

    @Test("verified with delivery: due for delivery at once; delivery finishes it; a delivery refusal escalates back to verified on retry")
    func delivery() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("B2")], verifierKind: .apple, now: t0)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "1"), AppleReceiptItem(productID: "gems", transactionID: "2")]
        _ = try store.complete(
            try claim(store).map { AttemptCompletion(order: $0, records: [record()], resolution: .match(items: items, environment: "Sandbox", finishes: false), charged: true) },
            owner: owner, now: t0)
        #expect(try store.order(id: "A1")?.state == .verified)
        #expect(try store.nextDueTime(.deliver) == t0)
        let deliveries = try claim(store, .deliver)
        #expect(deliveries.count == 2)
        #expect(deliveries[0].grant?.transactionID != nil)
        #expect(deliveries[0].grant?.environment == "Sandbox")
        #expect(try store.order(id: "A1")?.state == .verified)
        let results = try store.complete([
            AttemptCompletion(order: deliveries[0], records: [record(.delivery, status: nil)], resolution: .delivered, charged: true),
            AttemptCompletion(order: deliveries[1], records: [record(.delivery, status: nil)], resolution: .escalate(Reason(.endpointHTTP(.delivery, 422))), charged: true),
        ], owner: owner, now: t0)
        #expect(results.map(\.to) == [.finished, .escalated])
        #expect(try store.order(id: "A1")?.finishedBy == .delivery)
        #expect(try store.order(id: "B2")?.resumeState == .verified)
        #expect(try store.order(id: "B2")?.deliveryAttempts == 1)
    }

    @Test("a completion without the lease changes nothing")
    func lostLease() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        let results = try store.complete(
            [AttemptCompletion(order: order, records: [], resolution: .delivered, charged: true)], owner: "someone-else", now: t0)
        #expect(results.first?.applied == false)
        #expect(try store.order(id: "A1")?.state == .verifying)
    }

    @Test("new proof during an attempt: a refusal of the old proof does not stand")
    func newProofDuringAttempt() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        _ = try store.ingest([candidate("A1", receipt: "TkVX")], verifierKind: .apple, now: t0)
        let results = try store.complete(
            [AttemptCompletion(order: order, records: [record(status: 21003)], resolution: .reject(Reason(.receiptNotAuthenticated)), charged: true)],
            owner: owner, now: t0 + 2)
        #expect(results.first?.to == .pending)
        #expect(results.first?.reason.code == .newProof)
        #expect(try store.order(id: "A1")?.nextAttemptAt == t0 + 2)
    }

    @Test("leases left by a crash are released: verifying orders are due again")
    func releaseLeases() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        _ = try claim(store)
        #expect(try store.releaseLeases(now: t0 + 5).sorted() == ["A1", "A2"])
        let order = try #require(try store.order(id: "A1"))
        #expect(order.state == .pending)
        #expect(order.leaseOwner == nil)
        #expect(order.nextAttemptAt == t0 + 5)
        #expect(order.attempts == 1)
        #expect(try store.history(orderID: "A1").last?.reason == "lease_released")
        #expect(try store.releaseLeases(now: t0 + 6).isEmpty)
    }

    @Test("waiting orders expire after MaxAge; a new verifier kind promotes the ones it can verify")
    func waiting() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("W1", receipt: nil)], verifierKind: .apple, now: t0)
        _ = try store.ingest([candidate("W2", receipt: nil, transactionID: "7")], verifierKind: .apple, now: t0 + 100)
        #expect(try store.oldestWaitingReceivedAt() == t0)
        let expired = try store.expireWaiting(receivedBefore: t0 + 50, now: t0 + 200, limit: 10)
        #expect(expired.map(\.orderID) == ["W1"])
        #expect(try store.order(id: "W1")?.state == .expired)
        #expect(try store.promoteWaiting(usableBy: .apple, now: t0) == 0)
        #expect(try store.promoteWaiting(usableBy: .http, now: t0 + 300) == 1)
        #expect(try store.order(id: "W2")?.state == .pending)
        #expect(try store.order(id: "W2")?.nextAttemptAt == t0 + 300)
    }

    @Test("21002 answers are counted")
    func malformedCount() throws {
        let store = try fixture.open()
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        for round in 1...2 {
            let order = try #require(try claim(store, at: t0 + Double(round * 100)).first)
            #expect(order.malformedAnswers == round - 1)
            _ = try store.complete(
                [AttemptCompletion(order: order, records: [record(status: 21002)], resolution: .retry(at: t0 + Double(round * 100 + 1), reason: Reason(.apple(21002)), malformed: true), charged: true)],
                owner: owner, now: t0)
        }
        #expect(try store.scalar("SELECT malformed_answers FROM orders") == 2)
    }
}
