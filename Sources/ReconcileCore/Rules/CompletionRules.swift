import Foundation
import ReconcileFoundation

/// What the end of an attempt does to its order (DESIGN §4–§6): the verdict as a lifecycle
/// event, receipt matching and the transaction claim, a verdict set aside when new proof arrived
/// meanwhile, attempts refunded for probes and configuration errors, and the operator's action
/// that waited for the attempt.
public enum CompletionRules {
    /// The transaction ids whose claims ``plan(_:for:owner:now:lookups:)`` asks about: a store
    /// may read them ahead, for several completions at once.
    public static func claimLookups(for completion: AttemptCompletion) -> [String] {
        switch completion.resolution {
        case .match(let items, _, _): ReceiptMatcher.candidates(in: items, for: completion.order.matchKey).map(\.transactionID)
        case .playMatch(let match, _): [match.claimKey]
        default: []
        }
    }

    /// The plan for `completion` on the order as the store holds it now.
    ///
    /// - Returns: `nil` plan when the lease is no longer `owner`'s (another node rescued the
    ///   order, or an operator's start-up released it): nothing may be written, and the result
    ///   says so (`applied == false`).
    public static func plan(
        _ completion: AttemptCompletion, for record: OrderRecord, owner: String, now: Date, lookups: some RuleLookups
    ) throws -> (plan: OrderPlan?, result: CompletionResult) {
        let order = completion.order
        guard record.lease?.owner == owner else {
            return (nil, CompletionResult(
                orderID: order.orderID, productID: order.productID, from: record.state, to: record.state,
                reason: Reason(.leaseLost), attempts: order.attempt, applied: false))
        }
        var plan = OrderPlan(record: record)
        plan.attempts = completion.records.map { PlannedAttempt(number: order.attempt, kind: order.kind, record: $0) }

        var decision = try decide(completion, now: now, lookups: lookups)
        if let claim = decision.claim { plan.claims.append(PlannedClaim(transactionID: claim, at: now, actor: .daemon)) }

        // New proof during the attempt: a verdict against the old proof does not stand.
        let newProof = record.lease?.proofRevision.map { $0 != record.proofRevision } ?? false
        if newProof, order.kind.isVerification {
            switch decision.event {
            case .definitiveReject, .limitsHit, .transientFailure:
                decision.event = .transientFailure
                decision.reason = Reason(.newProof, detail: "new proof arrived during the attempt; it is tried next")
                decision.nextAttempt = now
                decision.countMalformed = false
            default:
                break
            }
        }

        guard case .moveTo(let state) = try OrderLifecycle.next(from: record.state, on: decision.event) else {
            preconditionFailure("a completion always moves the order: \(record.state) × \(decision.event)")
        }
        var resume: OrderState?
        if state == .escalated && record.state == .verified { resume = .verified }
        var nextAttempt = decision.nextAttempt
        if state == .verified && nextAttempt == nil { nextAttempt = now }  // on to delivery, at once
        if !(state == .pending || state == .verified) { nextAttempt = nil }
        // Probes and configuration errors are not charged: give back what the claim counted.
        let refund = completion.charged ? 0 : (order.charged ? 1 : 0)

        var after = record
        after.state = state
        after.resumeState = resume
        after.nextAttemptAt = nextAttempt
        after.reason = decision.reason.code
        after.updatedAt = now
        after.lease = nil
        if order.kind.isVerification { after.attempts -= refund } else { after.deliveryAttempts -= refund }
        if decision.countMalformed { after.malformedAnswers += 1 }
        if let grant = decision.grant { after.grant = Self.merged(grant, over: record.grant) }
        if let finisher = decision.finishedBy { after.finishedBy = finisher }
        // The package Google was asked about is the one the follow-ups name.
        if after.proof.packageName == nil, let packageName = decision.packageName { after.proof.packageName = packageName }
        plan.record = after
        // A Google Play order Google verified owes it an acknowledgement (or a consumption),
        // written with `finished` (DESIGN §5a).
        if state == .finished && record.state != .finished {
            plan.outbox = OutboxRules.playActions(for: after, followUp: completion.playFollowUp, now: now)
        }

        var transitionReason = decision.reason
        if let nextAttempt, state == .pending || (state == .verified && order.kind == .deliver) {
            transitionReason = transitionReason.adding("next attempt \(RFC3339.format(nextAttempt))")
        }
        plan.transitions.append(PlannedTransition(
            at: now, actor: .daemon, from: record.state, to: state, reason: transitionReason, linksLastAttempt: !plan.attempts.isEmpty))

        var result = CompletionResult(
            orderID: order.orderID, productID: order.productID, from: record.state, to: state, reason: decision.reason,
            attempts: after.attempts(order.kind),
            transactionID: decision.grant?.transactionID ?? order.grant?.transactionID ?? order.proof.transactionID,
            nextAttemptAt: nextAttempt)

        // An operator's action that waited for this attempt applies now.
        if let deferred = after.deferredAction {
            let applied = try OperatorRules.applyDeferred(deferred, to: &plan, now: now, lookups: lookups)
            if case .applied(_, let final) = applied.result {
                result.to = final
                result.reason = Reason(.operatorAction(deferred.request.action))
                result.appliedAction = deferred.request.action
                result.appliedBy = deferred.request.actor
                result.nextAttemptAt = final == .pending || final == .verified ? now : nil
            }
        }
        return (plan, result)
    }

    /// What an attempt decided, before new proof and the lifecycle table have their say.
    struct Decision {
        var event: OrderEvent
        var reason: Reason
        var nextAttempt: Date?
        var grant: Grant?
        var finishedBy: Finisher?
        var countMalformed = false
        /// A transaction id the order takes.
        var claim: String?
        /// Google Play: the package the purchase was read for.
        var packageName: String?
    }

    static func decide(_ completion: AttemptCompletion, now: Date, lookups: some RuleLookups) throws -> Decision {
        let order = completion.order
        switch completion.resolution {
        case .retry(let at, let reason, let malformed):
            return Decision(event: .transientFailure, reason: reason, nextAttempt: at, countMalformed: malformed)
        case .reject(let reason):
            return Decision(event: .definitiveReject(escalate: false), reason: reason)
        case .escalate(let reason, let limits):
            return Decision(event: limits ? .limitsHit : .definitiveReject(escalate: true), reason: reason)
        case .verified(let granted, let finishes, let finisher):
            return Decision(
                event: .verified(finishesOrder: finishes),
                reason: Reason(finisher == .merchant ? .granted : .verified), grant: granted,
                finishedBy: finishes ? finisher : nil)
        case .delivered:
            return Decision(event: .delivered, reason: Reason(.delivered), finishedBy: .delivery)
        case .finishedWithoutDelivery:
            return Decision(
                event: .delivered, reason: Reason(.noDeliveryURL, detail: "no delivery URL is configured: verified orders finish at once"),
                finishedBy: .verifier)
        case .match(let items, let environment, let finishes):
            let (claims, discovered) = try holders(of: claimLookups(for: completion), lookups: lookups)
            switch ReceiptMatcher.match(items, for: order.matchKey, claims: claims) {
            case .matched(let item):
                return Decision(
                    event: .verified(finishesOrder: finishes), reason: Reason(.verified), grant: Grant(item, environment: environment),
                    finishedBy: finishes ? .verifier : nil, claim: item.transactionID)
            case .duplicateTransaction(let transactionID, let claimant):
                if let late = latePhoneOrder(order.orderID, key: transactionID, claimant: claimant, discovered: discovered) { return late }
                return Decision(
                    event: .definitiveReject(escalate: true),
                    reason: Reason(.duplicateTransaction, detail: "transaction \(transactionID) is claimed by order \(claimant)"))
            case .refunded:
                return Decision(
                    event: .definitiveReject(escalate: false),
                    reason: Reason(.refunded, detail: "every matching purchase was refunded or revoked"))
            case .noMatchingPurchase:
                return Decision(
                    event: .definitiveReject(escalate: true),
                    reason: Reason(
                        .noMatchingPurchase, detail: "the receipt holds no unclaimed purchase of \(order.productID) for this order"))
            }
        case .playMatch(let match, let finishes):
            let (claims, discovered) = try holders(of: [match.claimKey], lookups: lookups)
            switch PlayMatcher.match(claimKey: match.claimKey, orderID: order.orderID, claims: claims) {
            case .matched(let key):
                return Decision(
                    event: .verified(finishesOrder: finishes), reason: Reason(.verified, detail: "Google: \(match.purchase.summary)"),
                    grant: Grant(match.purchase, productID: order.productID), finishedBy: finishes ? .verifier : nil, claim: key,
                    packageName: match.packageName)
            case .duplicateTransaction(let key, let claimant):
                if let late = latePhoneOrder(order.orderID, key: key, claimant: claimant, discovered: discovered) { return late }
                return Decision(
                    event: .definitiveReject(escalate: true),
                    reason: Reason(.duplicateTransaction, detail: "purchase \(key) is claimed by order \(claimant)"))
            }
        }
    }

    /// Who holds each of `keys`: the claims, and a purchase that became an order after a store
    /// reported it (DESIGN §5b), which holds its transaction from then, before its own
    /// verification has claimed it.
    static func holders(of keys: [String], lookups: some RuleLookups) throws -> (claims: [String: String], discovered: [String: String]) {
        var claims = try lookups.claimants(of: keys)
        let discovered = try lookups.discoveredOrders(of: keys)
        for (key, made) in discovered where claims[key] == nil { claims[key] = made }
        return (claims, discovered)
    }

    /// The phone's order, verified for a purchase that became order `claimant` on its own: it
    /// ends `finished`, finisher `discovery`, reason `same_purchase_as <claimant>` — nothing
    /// delivered, claimed or owed to Google (``DiscoveryRules/phoneOrder(_:verifiedFor:)``).
    /// `nil` when the claimant is any other order: the ordinary duplicate rules apply.
    static func latePhoneOrder(_ orderID: String, key: String, claimant: String, discovered: [String: String]) -> Decision? {
        guard let made = discovered[key], made == claimant,
            case .samePurchase(let other) = DiscoveryRules.phoneOrder(orderID, verifiedFor: .becameOrder(orderID: made))
        else { return nil }
        return Decision(
            event: .verified(finishesOrder: true), reason: Reason(.samePurchaseAs, detail: other), finishedBy: .discovery)
    }

    /// A grant over what the order had: each field the new grant leaves out keeps its value.
    static func merged(_ grant: Grant, over old: Grant?) -> Grant {
        Grant(
            transactionID: grant.transactionID ?? old?.transactionID,
            originalTransactionID: grant.originalTransactionID ?? old?.originalTransactionID,
            productID: grant.productID ?? old?.productID, quantity: grant.quantity ?? old?.quantity,
            purchaseDateMilliseconds: grant.purchaseDateMilliseconds ?? old?.purchaseDateMilliseconds,
            environment: grant.environment ?? old?.environment, acknowledgementState: grant.acknowledgementState ?? old?.acknowledgementState,
            consumptionState: grant.consumptionState ?? old?.consumptionState)
    }
}
