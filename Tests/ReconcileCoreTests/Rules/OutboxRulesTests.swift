import Foundation
import Testing
@testable import ReconcileCore

@Suite("Outbox rules: what a finished Play order owes Google, leases, completions, the deadline warning")
struct OutboxRulesTests {
    static let now = RuleFixtures.now
    static let owner = RuleFixtures.owner
    static let purchased = Int64(now.timeIntervalSince1970 * 1000) - 3_600_000

    static func playRecord(
        finishedBy: Finisher? = .verifier, acknowledged: Int? = 0, consumed: Int? = 0, token: String? = "tok-1", packageName: String? = nil
    ) -> OrderRecord {
        var record = RuleFixtures.record(.finished, proof: OrderProof(purchaseToken: token, packageName: packageName))
        record.finishedBy = finishedBy
        record.grant = Grant(
            transactionID: "GPA.1", productID: "gems", quantity: 1, purchaseDateMilliseconds: purchased, environment: "Production",
            acknowledgementState: acknowledged, consumptionState: consumed)
        return record
    }

    static func action(attempts: Int = 1, leased: Bool = true, deadline: Date? = nil, warnedAt: Date? = nil) -> OutboxAction {
        OutboxAction(
            reference: 3, orderReference: 7, orderID: "A1", kind: .playAcknowledge, endpoint: .googlePlay, idempotencyKey: "A1:play_acknowledge",
            payload: #"{"package_name":"com.example.app","product_id":"gems"}"#, attempts: attempts,
            lease: leased ? OutboxAction.Lease(owner: owner, until: now.addingTimeInterval(60)) : nil, createdAt: RuleFixtures.t0,
            updatedAt: RuleFixtures.t0, deadline: deadline ?? now.addingTimeInterval(3600), warnedAt: warnedAt)
    }

    static func completion(_ action: OutboxAction, _ resolution: OutboxCompletion.Resolution, charged: Bool = true, claimCharged: Bool = true) -> OutboxCompletion {
        OutboxCompletion(
            claimed: ClaimedAction(action: action, productID: "gems", proof: OrderProof(purchaseToken: "tok-1"), charged: claimCharged),
            resolution: resolution, charged: charged)
    }

    @Test("an unacknowledged purchase owes an acknowledgement: one pending action, keyed by the order, due now, its deadline 48 h after the purchase, no token in its payload")
    func acknowledgementOwed() throws {
        let followUp = PlayFollowUp(acknowledge: true, consume: false, packageName: "com.example.app")
        let actions = OutboxRules.playActions(for: Self.playRecord(), followUp: followUp, now: Self.now)
        let action = try #require(actions.first)
        #expect(actions.count == 1)
        #expect(action.kind == .playAcknowledge && action.endpoint == .googlePlay && action.state == .pending && action.attempts == 0)
        #expect(action.idempotencyKey == "A1:play_acknowledge" && action.nextAttemptAt == Self.now)
        #expect(action.deadline == Date(timeIntervalSince1970: Double(Self.purchased) / 1000).addingTimeInterval(48 * 3600))
        #expect(action.payloadText("package_name") == "com.example.app" && action.payloadText("product_id") == "gems")
        #expect(!action.payload.contains("tok-1"), "the token is read at send time, never stored in the action")
    }

    @Test("the order's own package name wins over the configured one")
    func packageName() throws {
        let record = Self.playRecord(packageName: "com.example.other")
        let action = try #require(OutboxRules.playActions(for: record, followUp: PlayFollowUp(packageName: "com.example.app"), now: Self.now).first)
        #expect(action.payloadText("package_name") == "com.example.other")
    }

    @Test("Consume=yes consumes instead; nothing is owed when Google said it is done, when both are off, for Apple orders, or for orders Google did not verify")
    func nothingOwed() {
        let consume = PlayFollowUp(acknowledge: true, consume: true)
        #expect(OutboxRules.playActions(for: Self.playRecord(), followUp: consume, now: Self.now).map(\.kind) == [.playConsume])
        // Acknowledged but not consumed: a consumable still owes its consumption.
        #expect(OutboxRules.playActions(for: Self.playRecord(acknowledged: 1), followUp: consume, now: Self.now).map(\.kind) == [.playConsume])
        #expect(OutboxRules.playActions(for: Self.playRecord(consumed: 1), followUp: consume, now: Self.now).isEmpty)
        #expect(OutboxRules.playActions(for: Self.playRecord(acknowledged: 1), followUp: PlayFollowUp(), now: Self.now).isEmpty)
        #expect(OutboxRules.playActions(for: Self.playRecord(consumed: 1), followUp: PlayFollowUp(), now: Self.now).isEmpty)
        #expect(OutboxRules.playActions(for: Self.playRecord(), followUp: PlayFollowUp(acknowledge: false, consume: false), now: Self.now).isEmpty)
        #expect(OutboxRules.playActions(for: Self.playRecord(token: nil), followUp: PlayFollowUp(), now: Self.now).isEmpty)
        for finisher in [Finisher.merchant, .operator] {
            #expect(OutboxRules.playActions(for: Self.playRecord(finishedBy: finisher), followUp: PlayFollowUp(), now: Self.now).isEmpty)
        }
        #expect(OutboxRules.playActions(for: Self.playRecord(finishedBy: .delivery), followUp: PlayFollowUp(), now: Self.now).count == 1)
    }

    @Test("a claim leases the action and counts the attempt only when charged")
    func claim() {
        let due = Self.action(attempts: 1, leased: false)
        let charged = OutboxRules.claim(due, owner: Self.owner, leaseUntil: Self.now + 60, charge: true, now: Self.now)
        #expect(charged.attempts == 2 && charged.lease?.owner == Self.owner && charged.nextAttemptAt == nil)
        let probe = OutboxRules.claim(due, owner: Self.owner, leaseUntil: Self.now + 60, charge: false, now: Self.now)
        #expect(probe.attempts == 1)
    }

    @Test("completions: done and skipped end the action; a retry keeps it pending with its next attempt; nothing is written without the lease")
    func complete() throws {
        let leased = Self.action()
        let (done, result) = OutboxRules.complete(Self.completion(leased, .done(Reason(.acknowledged))), for: leased, owner: Self.owner, now: Self.now)
        #expect(done?.state == .done && done?.lease == nil && done?.reason == .acknowledged && result.applied && !result.deadlineWarning)
        let (skipped, _) = OutboxRules.complete(Self.completion(leased, .skipped(Reason(.alreadyAcknowledged))), for: leased, owner: Self.owner, now: Self.now)
        #expect(skipped?.state == .skipped)
        let (retried, retry) = OutboxRules.complete(
            Self.completion(leased, .retry(at: Self.now + 30, reason: Reason(.playHTTP(503)))), for: leased, owner: Self.owner, now: Self.now)
        #expect(retried?.state == .pending && retried?.nextAttemptAt == Self.now + 30 && retried?.attempts == 1 && retry.nextAttemptAt == Self.now + 30)
        // Uncharged (a configuration error after a charged claim): the attempt is given back.
        let (uncharged, _) = OutboxRules.complete(
            Self.completion(leased, .retry(at: Self.now + 5, reason: Reason(.tokenHTTP(400, error: "invalid_grant"))), charged: false), for: leased, owner: Self.owner,
            now: Self.now)
        #expect(uncharged?.attempts == 0)
        // Another owner's lease, no lease, an action no longer pending: nothing.
        for action in [Self.action(leased: false), { var a = Self.action(); a.lease?.owner = "host-b:2:y"; return a }(),
                       { var a = Self.action(); a.state = .done; return a }()] {
            let (after, result) = OutboxRules.complete(Self.completion(action, .done(Reason(.acknowledged))), for: action, owner: Self.owner, now: Self.now)
            #expect(after == nil && !result.applied && result.reason.code == ReasonCode.leaseLost)
        }
    }

    @Test("past its deadline a failing action is warned once; done actions never; escalation past the deadline warns too if not yet warned")
    func deadline() {
        let overdue = Self.action(deadline: Self.now - 1)
        let (first, warned) = OutboxRules.complete(Self.completion(overdue, .retry(at: Self.now + 30, reason: Reason(.playHTTP(503)))), for: overdue, owner: Self.owner, now: Self.now)
        #expect(warned.deadlineWarning && first?.warnedAt == Self.now)
        var again = first!
        again.lease = OutboxAction.Lease(owner: Self.owner, until: Self.now + 90)
        let (_, second) = OutboxRules.complete(Self.completion(again, .retry(at: Self.now + 90, reason: Reason(.playHTTP(503)))), for: again, owner: Self.owner, now: Self.now + 60)
        #expect(!second.deadlineWarning, "warned once")
        let (_, done) = OutboxRules.complete(Self.completion(overdue, .done(Reason(.acknowledged))), for: overdue, owner: Self.owner, now: Self.now)
        #expect(!done.deadlineWarning)
        let (escalated, escalation) = OutboxRules.complete(Self.completion(overdue, .escalate(Reason(.maxAttempts))), for: overdue, owner: Self.owner, now: Self.now)
        #expect(escalated?.state == .escalated && escalation.deadlineWarning)
        let (_, early) = OutboxRules.complete(Self.completion(Self.action(), .retry(at: Self.now + 30, reason: Reason(.playHTTP(503)))), for: Self.action(), owner: Self.owner, now: Self.now)
        #expect(!early.deadlineWarning)
    }

    @Test("an action whose sender stopped is due again at once, its attempt still counted")
    func release() {
        let released = OutboxRules.release(Self.action(attempts: 2), now: Self.now)
        #expect(released.lease == nil && released.nextAttemptAt == Self.now && released.attempts == 2)
        var done = Self.action()
        done.state = .done
        #expect(OutboxRules.release(done, now: Self.now).nextAttemptAt == nil)
    }
}
