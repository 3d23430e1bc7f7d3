import Foundation
import Testing
@testable import ReconcileCore

@Suite("Operator rules (reconcilectl's verbs, without a store)")
struct OperatorRulesTests {
    typealias F = RuleFixtures

    func request(_ action: OperatorAction, note: String? = nil, reset: Bool = false, force: Bool = false, transaction: String? = nil) -> OperatorRequest {
        OperatorRequest(
            action: action, target: .orders(["A1"]), actor: .operator("alice"), note: note, resetAttempts: reset, force: force,
            transactionID: transaction)
    }

    func apply(_ request: OperatorRequest, to record: OrderRecord?, kind: VerifierKind? = .apple, lookups: FixedLookups = FixedLookups()) throws
        -> (OrderPlan?, OperatorOutcome.Result)
    {
        let (plan, outcome) = try OperatorRules.plan(request, on: record, orderID: "A1", verifierKind: kind, now: F.now, lookups: lookups)
        #expect(outcome.orderID == "A1")
        return (plan, outcome.result)
    }

    /// Every (state, action) pair: the outcome agrees with the lifecycle table, a refusal plans
    /// nothing, an applied action plans exactly one transition by the operator.
    @Test("every state × action follows DESIGN §4's table", arguments: OrderState.allCases)
    func table(state: OrderState) throws {
        for action in OperatorAction.allCases where state != .verifying {
            let record = F.record(state, resume: state == .held ? .escalated : nil)
            let expected = try? OrderLifecycle.next(from: state, on: .operatorAction(action), context: .init(resumeState: record.resumeState))
            let (plan, result) = try apply(request(action, note: "n"), to: record)
            switch (expected, result) {
            case (.moveTo(let to)?, .applied(let from, let applied)):
                #expect(from == state && applied == to, "\(state) \(action)")
                let only = try #require(plan?.transitions.only)
                #expect(only.actor == .operator("alice") && only.from == state && only.to == to && only.reason == Reason(.operatorAction(action), detail: "n"))
                #expect(plan?.record.state == to)
                #expect((plan?.record.nextAttemptAt != nil) == (to == .pending || to == .verified))
            case (nil, .refused(let why)):
                #expect(plan == nil)
                #expect(why.contains("cannot \(action.rawValue): the order is \(state)"), "\(why)")
            default:
                Issue.record("\(state) \(action): table says \(String(describing: expected)), rules say \(result)")
            }
        }
    }

    @Test("no such order")
    func notFound() throws {
        let (plan, result) = try apply(request(.hold), to: nil)
        #expect(plan == nil && result == .notFound)
    }

    @Test("hold remembers state, resume state and reason; release puts them back")
    func holdAndRelease() throws {
        var record = F.record(.escalated, reason: .duplicateTransaction, resume: .verified)
        let (held, _) = try apply(request(.hold), to: record)
        let heldRecord = try #require(held?.record)
        #expect(heldRecord.state == .held && heldRecord.resumeState == .escalated)
        #expect(heldRecord.heldResumeState == .verified && heldRecord.heldReason == .duplicateTransaction && heldRecord.reason == .hold)
        let (released, result) = try apply(request(.release), to: heldRecord)
        #expect(result == .applied(from: .held, to: .escalated))
        #expect(released?.record.resumeState == .verified && released?.record.reason == .duplicateTransaction)
        #expect(released?.record.heldResumeState == nil && released?.record.heldReason == nil)
        // A release with nothing remembered: the reason is the action's.
        record = F.record(.held, resume: .pending)
        let (plain, _) = try apply(request(.release), to: record)
        #expect(plain?.record.state == .pending && plain?.record.reason == .release && plain?.record.nextAttemptAt == F.now)
    }

    @Test("retry: due now; with --reset-attempts also attempts, malformed answers and the age clock; without usable proof: waiting")
    func retry() throws {
        var record = F.record(.rejected, attempts: 20)
        record.malformedAnswers = 2
        record.deliveryAttempts = 3
        let (plan, _) = try apply(request(.retry, note: "try again", reset: true), to: record)
        let after = try #require(plan?.record)
        #expect(after.state == .pending && after.nextAttemptAt == F.now && after.attempts == 0 && after.deliveryAttempts == 0)
        #expect(after.malformedAnswers == 0 && after.receivedAt == F.now)
        #expect(plan?.transitions.only?.reason.detail == "attempts and age reset; try again")
        let (kept, _) = try apply(request(.retry), to: record)
        #expect(kept?.record.attempts == 20 && kept?.record.receivedAt == F.t0)
        // Kind=apple cannot use a transaction id alone: the order waits.
        let (waiting, _) = try apply(request(.retry), to: F.record(.expired, proof: OrderProof(transactionID: "9")))
        #expect(waiting?.record.state == .waiting && waiting?.record.nextAttemptAt == nil)
        // Without a kind, any proof counts.
        let (any, _) = try apply(request(.retry), to: F.record(.expired, proof: OrderProof(transactionID: "9")), kind: nil)
        #expect(any?.record.state == .pending)
        // An order escalated during delivery goes back to verified.
        let (delivery, _) = try apply(request(.retry), to: F.record(.escalated, resume: .verified))
        #expect(delivery?.record.state == .verified && delivery?.record.nextAttemptAt == F.now)
    }

    @Test("retry of a finished order: its escalated follow-ups due again from zero attempts, the others and the order untouched; none escalated: refused")
    func retryFinished() throws {
        let record = F.record(.finished)
        func action(_ id: Int64, _ kind: OutboxKind, _ state: OutboxState) -> OutboxAction {
            OutboxAction(
                reference: id, orderReference: record.reference, orderID: "A1", kind: kind, endpoint: .googlePlay, idempotencyKey: "A1:\(id)",
                payload: "{}", state: state, attempts: 5, createdAt: F.t0, updatedAt: F.t0, warnedAt: F.t0, reason: .maxAttempts)
        }
        let lookups = FixedLookups(actions: [action(1, .playAcknowledge, .done), action(2, .playConsume, .escalated)])
        let (plan, result) = try apply(request(.retry, note: "Play is back"), to: record, lookups: lookups)
        #expect(result == .applied(from: .finished, to: .finished))
        let written = try #require(plan)
        #expect(!written.changesRecord && written.record == record, "the order itself is not changed")
        #expect(written.outboxUpdates.map(\.reference) == [2])
        let requeued = try #require(written.outboxUpdates.first)
        #expect(requeued.state == .pending && requeued.attempts == 0 && requeued.nextAttemptAt == F.now && requeued.warnedAt == nil)
        #expect(requeued.idempotencyKey == "A1:2", "sent again under its own key")
        #expect(written.transitions.only?.reason == Reason(.retryActions, detail: "play_consume sent again; Play is back"))

        let (none, refused) = try apply(request(.retry), to: record, lookups: FixedLookups(actions: [action(1, .playAcknowledge, .done)]))
        #expect(none == nil && refused == .refused("cannot retry: the order is finished, and no follow-up of it is escalated"))
    }

    @Test("retry of a revoked order sends its escalated revocation notice again, and it stays revoked")
    func retryRevoked() throws {
        let record = F.record(.revoked)
        let notice = OutboxAction(
            reference: 4, orderReference: record.reference, orderID: "A1", kind: .revocationNotice, endpoint: .revocation,
            idempotencyKey: "A1:revoked:1", payload: "{}", state: .escalated, attempts: 20, createdAt: F.t0, updatedAt: F.t0,
            reason: .revocationRefused)
        let (plan, result) = try apply(request(.retry), to: record, lookups: FixedLookups(actions: [notice]))
        #expect(result == .applied(from: .revoked, to: .revoked))
        #expect(plan?.outboxUpdates.map(\.idempotencyKey) == ["A1:revoked:1"] && plan?.outboxUpdates.first?.state == .pending)
        #expect(plan?.record.state == .revoked && plan?.changesRecord == false)
        let (_, refused) = try apply(request(.retry), to: record)
        #expect(refused == .refused("cannot retry: the order is revoked, and no follow-up of it is escalated"))
    }

    @Test("retrying a duplicate needs --force, and the refusal names the claimant from the history")
    func duplicateNeedsForce() throws {
        let record = F.record(.escalated, reason: .duplicateTransaction)
        let lookups = FixedLookups(details: [.duplicateTransaction: "transaction 7 is claimed by order B1"])
        let (plan, result) = try apply(request(.retry), to: record, lookups: lookups)
        #expect(plan == nil)
        #expect(result == .refused(
            "the order was escalated as a duplicate (transaction 7 is claimed by order B1); retry with --force to verify it again"))
        let (forced, _) = try apply(request(.retry, force: true), to: record, lookups: lookups)
        #expect(forced?.record.state == .pending)
    }

    @Test("resolve: finished by the operator; --transaction-id claims it unless another order holds it")
    func resolve() throws {
        let record = F.record(.escalated)
        let (plan, _) = try apply(request(.resolve, note: "paid by hand", transaction: "T5"), to: record)
        #expect(plan?.record.state == .finished && plan?.record.finishedBy == .operator && plan?.record.grant?.transactionID == "T5")
        #expect(plan?.claims == [PlannedClaim(transactionID: "T5", at: F.now, actor: .operator("alice"))])
        #expect(plan?.transitions.only?.reason.detail == "transaction T5 claimed; paid by hand")
        let (taken, result) = try apply(request(.resolve, transaction: "T5"), to: record, lookups: FixedLookups(claims: ["T5": "B2"]))
        #expect(taken == nil && result == .refused("transaction T5 is already claimed by order B2"))
        // Its own claim is no obstacle.
        let (own, _) = try apply(request(.resolve, transaction: "T5"), to: record, lookups: FixedLookups(claims: ["T5": "A1"]))
        #expect(own?.record.state == .finished)
    }

    @Test("an order in flight: the action is deferred (recorded, one at a time); release is refused")
    func deferred() throws {
        let record = F.record(.verifying, leased: true)
        let (plan, result) = try apply(request(.cancel, note: "fraud"), to: record)
        #expect(result == .deferred(state: .verifying))
        let deferred = try #require(plan?.record.deferredAction)
        #expect(deferred.request.action == .cancel && deferred.verifiers == ConfiguredVerifiers(kind: .apple) && plan?.record.state == .verifying)
        #expect(plan?.transitions.only?.reason == Reason(.requested(.cancel), detail: "applied when the attempt in flight ends; fraud"))
        let (second, refused) = try apply(request(.hold), to: plan?.record)
        #expect(second == nil && refused == .refused("an earlier cancel by operator:alice waits for the attempt in flight to end; try again once it has"))
        let (release, refusedRelease) = try apply(request(.release), to: record)
        #expect(release == nil && refusedRelease == .refused("cannot release: the order is verifying (an attempt is in flight), not held"))
    }

    @Test("the deferred action's stored form reads back the same")
    func storedForm() throws {
        let request = OperatorRequest(
            action: .resolve, target: .orders(["A1"]), actor: .operator("bob"), note: "n", resetAttempts: true, force: true, transactionID: "T")
        let action = DeferredAction(request: request, verifierKind: .appstore)
        #expect(DeferredAction(storedForm: action.storedForm, orderID: "A1") == action)
        #expect(DeferredAction(storedForm: "{}", orderID: "A1") == nil)
        #expect(DeferredAction(storedForm: "not json", orderID: "A1") == nil)
    }
}
