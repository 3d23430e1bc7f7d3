import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Completion rules (the end of an attempt, without a store)")
struct CompletionRulesTests {
    typealias F = RuleFixtures
    let lookups = FixedLookups()

    func plan(_ completion: AttemptCompletion, on record: OrderRecord, lookups: FixedLookups = FixedLookups()) throws -> (OrderPlan, CompletionResult) {
        let (plan, result) = try CompletionRules.plan(completion, for: record, owner: F.owner, now: F.now, lookups: lookups)
        return (try #require(plan), result)
    }

    @Test("a transient failure: pending, due at the retry time, reason and detail split, the request recorded and linked")
    func transient() throws {
        let record = F.record(.verifying, attempts: 2, leased: true)
        let at = F.now.addingTimeInterval(60)
        let (plan, result) = try plan(F.completion(record, .retry(at: at, reason: Reason(.http(503), detail: "service unavailable"))), on: record)
        #expect(plan.record.state == .pending && plan.record.nextAttemptAt == at && plan.record.lease == nil)
        #expect(plan.record.reason == .http(503) && plan.record.attempts == 2 && plan.record.updatedAt == F.now)
        #expect(plan.attempts == [PlannedAttempt(number: 2, kind: .verify, record: F.request())])
        let transition = try #require(plan.transitions.only)
        #expect(transition.from == .verifying && transition.to == .pending && transition.linksLastAttempt)
        #expect(transition.reason == Reason(.http(503), detail: "service unavailable; next attempt \(RFC3339.format(at))"))
        #expect(result.reason == Reason(.http(503), detail: "service unavailable") && result.nextAttemptAt == at && result.applied)
        #expect(plan.claims.isEmpty)
    }

    @Test("21002: the malformed count grows; a probe's or a configuration error's attempt is given back")
    func chargesAndRefunds() throws {
        let record = F.record(.verifying, attempts: 3, leased: true)
        let (malformed, _) = try plan(F.completion(record, .retry(at: F.now, reason: Reason(.apple(21002)), malformed: true)), on: record)
        #expect(malformed.record.malformedAnswers == 1 && malformed.record.attempts == 3)
        // The claim counted the attempt; the resolver says it is not charged: refunded.
        let (refunded, result) = try plan(F.completion(record, .retry(at: F.now, reason: Reason(.apple(21004))), charged: false), on: record)
        #expect(refunded.record.attempts == 2 && result.attempts == 2)
        // A probe was never counted: nothing to give back.
        let (probe, _) = try plan(F.completion(record, .retry(at: F.now, reason: Reason(.http(503))), charged: false, claimCharged: false), on: record)
        #expect(probe.record.attempts == 3)
        // Delivery attempts are their own count.
        var delivering = F.record(.verified, leased: true)
        delivering.deliveryAttempts = 4
        let (delivery, _) = try plan(F.completion(delivering, .retry(at: F.now, reason: Reason(.http(503))), kind: .deliver, charged: false), on: delivering)
        #expect(delivery.record.deliveryAttempts == 3 && delivery.record.attempts == 1 && delivery.record.state == .verified)
    }

    @Test("reject, escalate and limits: the table's states; no next attempt")
    func endings() throws {
        let record = F.record(.verifying, leased: true)
        let (rejected, r1) = try plan(F.completion(record, .reject(Reason(.apple(21010), detail: "receipt unauthorized"))), on: record)
        #expect(rejected.record.state == .rejected && rejected.record.nextAttemptAt == nil && r1.reason.detail == "receipt unauthorized")
        let (escalated, r2) = try plan(F.completion(record, .escalate(Reason(parsing: "merchant_http_422: bad product").adding("more"))), on: record)
        #expect(escalated.record.state == .escalated && escalated.record.reason == .merchantHTTP(422) && r2.reason.detail == "bad product; more")
        let (limits, _) = try plan(F.completion(record, .escalate(Reason(.maxAttempts, detail: "20 attempts"), limits: true)), on: record)
        #expect(limits.record.state == .escalated && limits.record.resumeState == nil)
    }

    @Test("granted by the merchant: finished by merchant, the grant kept; verified without delivery: due for delivery now")
    func verified() throws {
        let record = F.record(.verifying, leased: true)
        let grant = Grant(transactionID: "T1", productID: "gems")
        let (merchant, result) = try plan(F.completion(record, .verified(grant, finishes: true, finishedBy: .merchant)), on: record)
        #expect(merchant.record.state == .finished && merchant.record.finishedBy == .merchant && merchant.record.reason == .granted)
        #expect(merchant.record.grant == grant && result.transactionID == "T1")
        let (toDeliver, _) = try plan(F.completion(record, .verified(grant, finishes: false, finishedBy: .verifier)), on: record)
        #expect(toDeliver.record.state == .verified && toDeliver.record.nextAttemptAt == F.now && toDeliver.record.finishedBy == nil)
    }

    @Test("delivery: delivered finishes (by delivery); a refusal escalates and remembers verified; a failure stays verified")
    func delivery() throws {
        var record = F.record(.verified, leased: true)
        record.grant = Grant(transactionID: "T9", environment: "Production")
        let (delivered, result) = try plan(F.completion(record, .delivered, kind: .deliver), on: record)
        #expect(delivered.record.state == .finished && delivered.record.finishedBy == .delivery && result.transactionID == "T9")
        #expect(delivered.record.grant == record.grant)
        let (refused, _) = try plan(F.completion(record, .escalate(Reason(.endpointHTTP(.delivery, 422), detail: "no such user")), kind: .deliver), on: record)
        #expect(refused.record.state == .escalated && refused.record.resumeState == .verified)
        let at = F.now.addingTimeInterval(30)
        let (failed, _) = try plan(F.completion(record, .retry(at: at, reason: Reason(.http(503))), kind: .deliver), on: record)
        #expect(failed.record.state == .verified && failed.record.nextAttemptAt == at)
        #expect(failed.transitions.only?.reason.detail == "next attempt \(RFC3339.format(at))")
    }

    @Test("a match claims the chosen transaction; duplicates name the claimant; refunded; nothing matching")
    func matching() throws {
        let record = F.record(.verifying, leased: true)
        let items = [F.item("100"), F.item("101")]
        let match = F.completion(record, .match(items: items, environment: "Production", finishes: true))
        #expect(Set(CompletionRules.claimLookups(for: match)) == ["100", "101"])
        let (claimed, _) = try plan(match, on: record, lookups: FixedLookups(claims: ["100": "OTHER"]))
        #expect(claimed.claims == [PlannedClaim(transactionID: "101", at: F.now, actor: .daemon)])
        #expect(claimed.record.state == .finished && claimed.record.finishedBy == .verifier && claimed.record.grant?.transactionID == "101")
        #expect(claimed.record.grant?.environment == "Production")

        let (duplicate, result) = try plan(match, on: record, lookups: FixedLookups(claims: ["100": "B1", "101": "B2"]))
        #expect(duplicate.record.state == .escalated && duplicate.claims.isEmpty)
        #expect(result.reason == Reason(.duplicateTransaction, detail: "transaction 100 is claimed by order B1"))

        var refundedItem = F.item("100")
        refundedItem.cancellationDateMilliseconds = 5
        let (refunded, _) = try plan(
            F.completion(record, .match(items: [refundedItem], environment: nil, finishes: true)), on: record)
        #expect(refunded.record.state == .rejected && refunded.record.reason == .refunded)
        let (nothing, r) = try plan(F.completion(record, .match(items: [F.item("1", product: "coins")], environment: nil, finishes: false)), on: record)
        #expect(nothing.record.state == .escalated && r.reason.code == .noMatchingPurchase)
        // A store that cannot read its claims fails the whole plan (nothing half-applied).
        #expect(throws: FixedLookups.Failure.self) { try CompletionRules.plan(match, for: record, owner: F.owner, now: F.now, lookups: FixedLookups(failing: true)) }
    }

    @Test("the late phone order: its purchase became an order the store reported — finished same_purchase_as it, nothing claimed or owed")
    func latePhoneOrder() throws {
        let record = F.record(.verifying, id: "M-42", leased: true)
        let match = F.completion(record, .match(items: [F.item("100")], environment: "Production", finishes: false))
        // Made, not yet verified (no claim yet): the made order holds the transaction all the same.
        for claims in [[:], ["100": "apple:100"]] {
            let (late, result) = try plan(match, on: record, lookups: FixedLookups(claims: claims, discovered: ["100": "apple:100"]))
            #expect(late.record.state == .finished && late.record.finishedBy == .discovery && late.record.nextAttemptAt == nil, "\(claims)")
            #expect(result.reason == Reason(.samePurchaseAs, detail: "apple:100") && late.claims.isEmpty && late.outbox.isEmpty)
        }
        // The made order itself verifies as any order, and claims its transaction.
        let made = F.record(.verifying, id: "apple:100", leased: true)
        let (own, _) = try plan(
            F.completion(made, .match(items: [F.item("100")], environment: "Production", finishes: true)), on: made,
            lookups: FixedLookups(discovered: ["100": "apple:100"]))
        #expect(own.record.state == .finished && own.record.finishedBy == .verifier && own.claims.map(\.transactionID) == ["100"])
        // Another purchase of the receipt is still this order's; a claim by a phone order stays a duplicate.
        let two = F.completion(record, .match(items: [F.item("100"), F.item("101")], environment: nil, finishes: true))
        let (other, _) = try plan(two, on: record, lookups: FixedLookups(discovered: ["100": "apple:100"]))
        #expect(other.claims.map(\.transactionID) == ["101"] && other.record.finishedBy == .verifier)
        let (duplicate, _) = try plan(match, on: record, lookups: FixedLookups(claims: ["100": "M-41"], discovered: ["100": "apple:100"]))
        #expect(duplicate.record.state == .escalated && duplicate.record.reason == .duplicateTransaction)

        // Google Play: the same, and no acknowledgement is owed for the late order.
        let play = F.record(.verifying, id: "M-43", proof: OrderProof(purchaseToken: "tok", packageName: "com.example"), leased: true)
        let purchase = PlayPurchase(purchaseState: 0, acknowledgementState: 0, orderID: "GPA.1")
        var completion = F.completion(
            play, .playMatch(PlayMatch(purchase: purchase, claimKey: "google:GPA.1", packageName: "com.example"), finishes: true))
        completion.playFollowUp = PlayFollowUp(acknowledge: true)
        let (latePlay, playResult) = try plan(completion, on: play, lookups: FixedLookups(discovered: ["google:GPA.1": "google:GPA.1"]))
        #expect(latePlay.record.finishedBy == .discovery && latePlay.outbox.isEmpty && latePlay.claims.isEmpty)
        #expect(playResult.reason == Reason(.samePurchaseAs, detail: "google:GPA.1"))
        let (phonePlay, _) = try plan(completion, on: play)
        #expect(phonePlay.record.finishedBy == .verifier && phonePlay.outbox.map(\.kind) == [.playAcknowledge])
    }

    @Test("new proof during the attempt: a failure, rejection or limit does not stand — due now, reason new_proof; a grant does")
    func newProof() throws {
        let record = F.record(.verifying, leased: true, leaseRevision: 1, proofRevision: 2)
        for resolution in [
            AttemptCompletion.Resolution.reject(Reason(.apple(21010))), .escalate(Reason(.maxAttempts), limits: true),
            .retry(at: F.now.addingTimeInterval(999), reason: Reason(.apple(21002)), malformed: true),
            .escalate(Reason(.noMatchingPurchase)),
        ] {
            let (plan, result) = try plan(F.completion(record, resolution), on: record)
            #expect(plan.record.state == .pending && plan.record.nextAttemptAt == F.now && result.reason.code == .newProof, "\(resolution)")
            #expect(plan.record.malformedAnswers == 0)
        }
        let (granted, _) = try plan(F.completion(record, .verified(Grant(), finishes: true, finishedBy: .merchant)), on: record)
        #expect(granted.record.state == .finished)
        // Delivery attempts are not about the proof.
        var delivering = F.record(.verified, leased: true, leaseRevision: 1, proofRevision: 2)
        delivering.grant = Grant(transactionID: "T")
        let (refused, _) = try plan(F.completion(delivering, .escalate(Reason(.endpointHTTP(.delivery, 422))), kind: .deliver), on: delivering)
        #expect(refused.record.state == .escalated)
    }

    @Test("the lease is someone else's: nothing is planned, the result says not applied")
    func leaseLost() throws {
        var record = F.record(.verifying, leased: true)
        record.lease?.owner = "host-b:2:y"
        let (plan, result) = try CompletionRules.plan(
            F.completion(record, .delivered), for: record, owner: F.owner, now: F.now, lookups: lookups)
        #expect(plan == nil && !result.applied && result.reason.code == .leaseLost)
        record.lease = nil
        #expect(try CompletionRules.plan(F.completion(record, .delivered), for: record, owner: F.owner, now: F.now, lookups: lookups).plan == nil)
    }

    @Test("an operator's deferred action applies when the attempt ends; a refused one is recorded")
    func deferredActions() throws {
        var record = F.record(.verifying, leased: true)
        record.deferredAction = DeferredAction(
            request: OperatorRequest(action: .hold, target: .orders(["A1"]), actor: .operator("alice"), note: "look"), verifierKind: .apple)
        let (held, result) = try plan(F.completion(record, .retry(at: F.now.addingTimeInterval(60), reason: Reason(.http(503)))), on: record)
        #expect(held.record.state == .held && held.record.resumeState == .pending && held.record.heldReason == .http(503))
        #expect(held.record.deferredAction == nil && held.record.nextAttemptAt == nil)
        #expect(held.transitions.map(\.to) == [.pending, .held] && held.transitions[1].actor == .operator("alice"))
        #expect(result.to == .held && result.appliedAction == .hold && result.appliedBy == .operator("alice") && result.reason.code == .hold)

        // retry of an order that the attempt escalated as a duplicate, without --force: refused,
        // naming the claimant from this very attempt.
        record.deferredAction = DeferredAction(
            request: OperatorRequest(action: .retry, target: .orders(["A1"]), actor: .operator("bob")), verifierKind: .apple)
        let (refused, refusedResult) = try plan(
            F.completion(record, .match(items: [F.item("5")], environment: nil, finishes: true)), on: record,
            lookups: FixedLookups(claims: ["5": "B7"]))
        #expect(refused.record.state == .escalated && refused.record.deferredAction == nil && refusedResult.appliedAction == nil)
        let last = try #require(refused.transitions.last)
        #expect(last.reason.code == .notApplied(.retry) && last.from == .escalated && last.to == .escalated)
        #expect(last.reason.detail?.contains("transaction 5 is claimed by order B7") == true)
    }
}

extension Array {
    /// The one element, or `nil` when there are none or several.
    var only: Element? { count == 1 ? first : nil }
}
