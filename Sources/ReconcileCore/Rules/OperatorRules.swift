import Foundation

/// What an operator's action does to an order (DESIGN §4, §10): the lifecycle table's answer,
/// a hold that remembers where the order was and a release that puts it back, `retry` of a
/// duplicate needing `--force`, `resolve --transaction-id` claiming the transaction, and actions on
/// an order whose attempt is in flight deferred until it ends (one at a time).
public enum OperatorRules {
    /// The plan and the outcome of `request` on the order (`nil`: no such order).
    ///
    /// - Parameter verifiers: decide whether a retried order has usable proof (`nil`: any proof
    ///   counts).
    public static func plan(
        _ request: OperatorRequest, on record: OrderRecord?, orderID: String, verifiers: ConfiguredVerifiers?, now: Date,
        lookups: some RuleLookups
    ) throws -> (plan: OrderPlan?, outcome: OperatorOutcome) {
        guard let record else { return (nil, OperatorOutcome(orderID: orderID, result: .notFound)) }
        guard record.lease == nil else { return deferUntilAttemptEnds(request, on: record, verifiers: verifiers, now: now) }
        var plan = OrderPlan(record: record, changesRecord: false)
        let result = try perform(request, verifiers: verifiers, on: &plan, now: now, lookups: lookups)
        return (plan.changesRecord || !plan.transitions.isEmpty ? plan : nil, OperatorOutcome(orderID: orderID, result: result))
    }

    /// `retry` of a finished or revoked order: the order stays where it is (a terminal state);
    /// what is sent again is each follow-up it owes that was escalated (DESIGN §5a: a Play
    /// acknowledgement, the merchant's revocation notice) — due now, its attempts from zero, the
    /// retry in the order's history. Refused when none is.
    static func requeueEscalatedActions(
        _ request: OperatorRequest, on plan: inout OrderPlan, now: Date, lookups: some RuleLookups
    ) throws -> OperatorOutcome.Result {
        let escalated = try lookups.escalatedActions(orderReference: plan.record.reference)
        guard !escalated.isEmpty else {
            return .refused("cannot retry: the order is \(plan.record.state), and no follow-up of it is escalated")
        }
        plan.outboxUpdates = escalated.map { OutboxRules.requeue($0, actor: request.actor, now: now) }
        let kinds = escalated.map(\.kind.rawValue).joined(separator: ", ")
        plan.transitions.append(PlannedTransition(
            at: now, actor: request.actor, from: plan.record.state, to: plan.record.state,
            reason: Reason(.retryActions, detail: Reason.joined("\(kinds) sent again", request.note))))
        return .applied(from: plan.record.state, to: plan.record.state)
    }

    /// The attempt in flight ends first; its completion applies the action (DESIGN §4).
    static func deferUntilAttemptEnds(
        _ request: OperatorRequest, on record: OrderRecord, verifiers: ConfiguredVerifiers?, now: Date
    ) -> (plan: OrderPlan?, outcome: OperatorOutcome) {
        let orderID = record.orderID
        guard request.action != .release else {
            return (nil, OperatorOutcome(
                orderID: orderID, result: .refused("cannot release: the order is \(record.state) (an attempt is in flight), not held")))
        }
        // One action waits at a time: a second one would silently replace the first.
        if let waiting = record.deferredAction {
            return (nil, OperatorOutcome(
                orderID: orderID,
                result: .refused(
                    "an earlier \(waiting.request.action.rawValue) by \(waiting.request.actor) waits for the attempt in flight to end; try again once it has")))
        }
        var after = record
        after.deferredAction = DeferredAction(request: request, verifiers: verifiers)
        let transition = PlannedTransition(
            at: now, actor: request.actor, from: record.state, to: record.state,
            reason: Reason(.requested(request.action), detail: Reason.joined("applied when the attempt in flight ends", request.note)))
        return (OrderPlan(record: after, transitions: [transition]), OperatorOutcome(orderID: orderID, result: .deferred(state: record.state)))
    }

    /// Applies the action that waited for an attempt, on the plan that ends the attempt: its
    /// record is the order after the attempt. A refusal is recorded in the history.
    static func applyDeferred(
        _ deferred: DeferredAction, to plan: inout OrderPlan, now: Date, lookups: some RuleLookups
    ) throws -> OperatorOutcome {
        plan.record.deferredAction = nil
        let before = plan.record.state
        let result = try perform(deferred.request, verifiers: deferred.verifiers, on: &plan, now: now, lookups: lookups)
        if case .refused(let why) = result {
            plan.transitions.append(PlannedTransition(
                at: now, actor: deferred.request.actor, from: before, to: before,
                reason: Reason(.notApplied(deferred.request.action), detail: "after the attempt: \(why)")))
        }
        return OperatorOutcome(orderID: plan.record.orderID, result: result)
    }

    /// Applies the action to an order that is not leased, on `plan.record`.
    static func perform(
        _ request: OperatorRequest, verifiers: ConfiguredVerifiers?, on plan: inout OrderPlan, now: Date, lookups: some RuleLookups
    ) throws -> OperatorOutcome.Result {
        let record = plan.record
        if request.action == .retry && record.state == .escalated && record.reason == .duplicateTransaction && !request.force {
            let claimant = try duplicateDetail(of: plan, lookups: lookups)
            return .refused(
                "the order was escalated as a duplicate (\(claimant ?? "its transaction is claimed by another order")); retry with --force to verify it again")
        }
        if request.action == .retry && (record.state == .finished || record.state == .revoked) {
            return try requeueEscalatedActions(request, on: &plan, now: now, lookups: lookups)
        }
        let usable = verifiers.map { record.proof.isUsable(by: $0) } ?? !record.proof.isEmpty
        let context = OrderLifecycle.Context(resumeState: record.resumeState, hasUsableProof: usable)
        let next: OrderState
        do {
            guard case .moveTo(let state) = try OrderLifecycle.next(from: record.state, on: .operatorAction(request.action), context: context)
            else {
                return .refused("cannot \(request.action.rawValue): the order is \(record.state)")
            }
            next = state
        } catch {
            return .refused(error.description)
        }

        if request.action == .resolve, let transactionID = request.transactionID {
            if let holder = try lookups.claimants(of: [transactionID])[transactionID], holder != record.orderID {
                return .refused("transaction \(transactionID) is already claimed by order \(holder)")
            }
            plan.claims.append(PlannedClaim(transactionID: transactionID, at: now, actor: request.actor))
        }

        var after = record
        after.state = next
        switch request.action {
        case .hold:
            // Remember where the order was, and keep its resume state and reason aside.
            after.resumeState = record.state
            after.heldResumeState = record.resumeState
            after.heldReason = record.reason
            after.reason = .operatorAction(request.action)
        case .release:
            after.resumeState = record.heldResumeState
            after.reason = record.heldReason ?? .operatorAction(request.action)
            after.heldResumeState = nil
            after.heldReason = nil
        default:
            after.resumeState = nil
            after.reason = .operatorAction(request.action)
            after.heldResumeState = nil
            after.heldReason = nil
        }
        after.nextAttemptAt = next == .pending || next == .verified ? now : nil
        after.updatedAt = now
        after.deferredAction = nil
        if request.action == .resolve {
            after.finishedBy = .operator
            if let transactionID = request.transactionID {
                var grant = after.grant ?? Grant()
                grant.transactionID = transactionID
                after.grant = grant
            }
        }
        if request.resetAttempts {
            after.attempts = 0
            after.deliveryAttempts = 0
            after.malformedAnswers = 0
            after.receivedAt = now
        }
        plan.record = after
        plan.changesRecord = true

        var detail = request.note
        if request.resetAttempts { detail = Reason.joined("attempts and age reset", detail) }
        if let transactionID = request.transactionID, request.action == .resolve {
            detail = Reason.joined("transaction \(transactionID) claimed", detail)
        }
        plan.transitions.append(PlannedTransition(
            at: now, actor: request.actor, from: record.state, to: next, reason: Reason(.operatorAction(request.action), detail: detail)))
        return .applied(from: record.state, to: next)
    }

    /// What the duplicate escalation said (`transaction 7 is claimed by order A1`): from this
    /// plan when it escalated the order, else from the history.
    static func duplicateDetail(of plan: OrderPlan, lookups: some RuleLookups) throws -> String? {
        if let planned = plan.transitions.last(where: { $0.reason.code == .duplicateTransaction }) {
            return planned.reason.detail
        }
        return try lookups.latestDetail(orderReference: plan.record.reference, reason: .duplicateTransaction)
    }
}

extension OperatorRules {
    /// ``plan(_:on:orderID:verifiers:now:lookups:)`` with `[Verifier] Kind=kind` only.
    public static func plan(
        _ request: OperatorRequest, on record: OrderRecord?, orderID: String, verifierKind: VerifierKind?, now: Date,
        lookups: some RuleLookups
    ) throws -> (plan: OrderPlan?, outcome: OperatorOutcome) {
        try plan(
            request, on: record, orderID: orderID, verifiers: verifierKind.map { ConfiguredVerifiers(kind: $0) }, now: now, lookups: lookups)
    }
}
