import Foundation
import Testing
@testable import ReconcileCore

@Suite("Lease, waiting and ingest rules (without a store)")
struct LeaseRulesTests {
    typealias F = RuleFixtures

    @Test("a claim leases a due order: verifying with the attempt counted; a probe is not counted; a delivery stays verified")
    func claim() {
        let record = F.record(.pending, attempts: 2)
        let lease = F.now.addingTimeInterval(120)
        let (plan, order) = LeaseRules.claim(record, ClaimRequest(kind: .verify, limit: 1, charge: true, leaseUntil: lease), owner: F.owner, now: F.now)
        #expect(plan.record.state == .verifying && plan.record.attempts == 3 && plan.record.nextAttemptAt == nil)
        #expect(plan.record.lease == OrderRecord.Lease(owner: F.owner, until: lease, proofRevision: 1))
        #expect(plan.transitions.only?.reason == Reason(.attempt, detail: "attempt 3"))
        #expect(order.attempt == 3 && order.charged && order.kind == .verify && order.proof == record.proof)

        let (probe, probed) = LeaseRules.claim(record, ClaimRequest(kind: .verify, limit: 1, charge: false, leaseUntil: lease), owner: F.owner, now: F.now)
        #expect(probe.record.attempts == 2 && !probed.charged && probed.attempt == 2)
        #expect(probe.transitions.only?.reason == Reason(.probe, detail: "circuit probe (not charged)"))

        var verified = F.record(.verified)
        verified.grant = Grant(transactionID: "T")
        let (delivery, delivered) = LeaseRules.claim(verified, ClaimRequest(kind: .deliver, limit: 1, charge: true, leaseUntil: lease), owner: F.owner, now: F.now)
        #expect(delivery.record.state == .verified && delivery.record.deliveryAttempts == 1 && delivery.transitions.isEmpty)
        #expect(delivered.grant?.transactionID == "T" && delivered.attempt == 1)
    }

    @Test("a lease that ends without its completion: due again now, the attempt still counted; a deferred action applies")
    func leaseEnds() throws {
        let record = F.record(.verifying, attempts: 4, leased: true)
        let released = try LeaseRules.end(record, .released, now: F.now, lookups: FixedLookups())
        #expect(released.record.state == .pending && released.record.nextAttemptAt == F.now && released.record.lease == nil)
        #expect(released.record.attempts == 4)
        #expect(released.transitions.only?.reason.code == .leaseReleased)
        let expired = try LeaseRules.end(record, .expired, now: F.now, lookups: FixedLookups())
        #expect(expired.transitions.only?.reason.code == .leaseExpired)
        #expect(expired.transitions.only?.reason.detail?.contains(F.owner) == true)

        let delivering = F.record(.verified, leased: true)
        let back = try LeaseRules.end(delivering, .expired, now: F.now, lookups: FixedLookups())
        #expect(back.record.state == .verified && back.record.nextAttemptAt == F.now && back.transitions.isEmpty)

        var withAction = record
        withAction.deferredAction = DeferredAction(
            request: OperatorRequest(action: .cancel, target: .orders(["A1"]), actor: .operator("eve"), note: "x"), verifierKind: nil)
        let cancelled = try LeaseRules.end(withAction, .released, now: F.now, lookups: FixedLookups())
        #expect(cancelled.record.state == .cancelled && cancelled.record.deferredAction == nil && cancelled.record.nextAttemptAt == nil)
        #expect(cancelled.transitions.map(\.to) == [.pending, .cancelled])
    }

    @Test("waiting orders expire after MaxAge, and become pending when the verifier can use their proof")
    func waiting() throws {
        let record = F.record(.waiting, proof: OrderProof(transactionID: "1"))
        let (expired, result) = WaitingRules.expire(record, now: F.now)
        #expect(expired.record.state == .expired && expired.record.reason == .maxAge && result.to == .expired)
        #expect(WaitingRules.promote(record, usableBy: .apple, now: F.now) == nil)
        let promoted = try #require(WaitingRules.promote(record, usableBy: .appstore, now: F.now))
        #expect(promoted.record.state == .pending && promoted.record.nextAttemptAt == F.now && promoted.record.reason == .verifierChanged)
        #expect(WaitingRules.promote(F.record(.pending), usableBy: .apple, now: F.now) == nil)
    }

    // MARK: - Ingest (DESIGN §3)

    func candidate(_ submission: OrderSubmission, hash: String = "h2") -> IngestCandidate {
        IngestCandidate(submission: submission, raw: Array("{}".utf8), contentHash: hash, fileName: "f.json")
    }

    func submission(product: String = "gems", proof: OrderProof = OrderProof(receipt: "TkVX")) -> OrderSubmission {
        OrderSubmission(orderID: "A1", productID: product, proof: proof)
    }

    @Test("a new order: pending with usable proof, else waiting; identical content: nothing; another product: conflict")
    func ingestNew() throws {
        let (plan, outcome) = IngestRules.plan(candidate(submission()), existing: nil, verifierKind: .apple, now: F.now)
        #expect(outcome == .accepted(.pending) && plan?.record.nextAttemptAt == F.now && plan?.record.reason == .ingested)
        #expect(plan?.raw == Array("{}".utf8) && plan?.transitions.only?.from == nil)
        let (waiting, waitingOutcome) = IngestRules.plan(
            candidate(submission(proof: OrderProof(transactionID: "1"))), existing: nil, verifierKind: .apple, now: F.now)
        #expect(waitingOutcome == .accepted(.waiting) && waiting?.record.nextAttemptAt == nil)
        #expect(waiting?.transitions.only?.reason.detail?.contains("Kind=apple cannot verify") == true)

        let stored = F.record(.pending)
        #expect(IngestRules.plan(candidate(submission(), hash: "h1"), existing: stored, verifierKind: .apple, now: F.now).outcome == .unchanged)
        guard case .conflict(let problem) = IngestRules.plan(candidate(submission(product: "coins")), existing: stored, verifierKind: .apple, now: F.now).outcome
        else { Issue.record("no conflict"); return }
        #expect(problem.code == .conflictingProduct)
        // A future created_at is clamped to the ingest time.
        var future = submission()
        future.createdAt = F.now.addingTimeInterval(3600)
        #expect(IngestRules.plan(candidate(future), existing: nil, verifierKind: .apple, now: F.now).plan?.record.createdAt == F.now)
    }

    @Test("new proof: dormant and waiting orders due now; held keeps holding (its resume state revived); verifying and verified keep going")
    func ingestProof() throws {
        for (state, expected) in [
            (OrderState.waiting, OrderState.pending), (.pending, .pending), (.rejected, .pending), (.escalated, .pending), (.expired, .pending),
            (.verifying, .verifying), (.verified, .verified), (.held, .held),
        ] {
            var stored = F.record(state, proof: OrderProof(transactionID: "old"), resume: state == .held ? .escalated : (state == .escalated ? .verified : nil))
            stored.heldReason = state == .held ? .duplicateTransaction : nil
            let (plan, outcome) = IngestRules.plan(candidate(submission()), existing: stored, verifierKind: .apple, now: F.now)
            #expect(outcome == .proofReplaced(from: state, to: expected), "\(state)")
            let after = try #require(plan?.record)
            #expect(after.proof == OrderProof(receipt: "TkVX", transactionID: "old"), "proof merged, never taken away")
            #expect(after.proofRevision == 2 && after.contentHash == "h2" && plan?.raw != nil)
            #expect((after.nextAttemptAt == F.now) == (expected == .pending && state != .pending) || state == .pending)
            if state == .held {
                #expect(after.resumeState == .pending && after.heldReason == .proofReplaced && after.heldResumeState == nil)
            }
            if state.isDormant { #expect(after.resumeState == nil && after.reason == .proofReplaced) }
        }
    }

    @Test("duplicates: a finished or cancelled order, or a file without new proof, only leave a history row")
    func ingestDuplicates() throws {
        for state in [OrderState.finished, .cancelled] {
            let (plan, outcome) = IngestRules.plan(candidate(submission()), existing: F.record(state), verifierKind: .apple, now: F.now)
            #expect(outcome == .duplicateIgnored(state: state, why: "the order is \(state); a later file changes nothing"))
            #expect(plan?.changesRecord == false && plan?.transitions.only?.reason.code == .duplicateIgnored)
        }
        let same = F.record(.pending, proof: OrderProof(receipt: "TkVX"))
        let (plan, outcome) = IngestRules.plan(candidate(submission()), existing: same, verifierKind: .apple, now: F.now)
        #expect(outcome == .duplicateIgnored(state: .pending, why: "no new proof") && plan?.changesRecord == false)
        let (noProof, noProofOutcome) = IngestRules.plan(candidate(submission(proof: OrderProof())), existing: same, verifierKind: .apple, now: F.now)
        #expect(noProofOutcome == .duplicateIgnored(state: .pending, why: "no new proof") && noProof?.changesRecord == false)
        // Proof the verifier cannot use is kept; the order stays where it is.
        let (kept, keptOutcome) = IngestRules.plan(
            candidate(submission(proof: OrderProof(transactionID: "2"))), existing: F.record(.waiting, proof: OrderProof()), verifierKind: .apple, now: F.now)
        #expect(keptOutcome == .proofReplaced(from: .waiting, to: .waiting) && kept?.record.proof.transactionID == "2")
    }
}
