import Foundation

/// Leases (DESIGN §4, §7): taking a due order for an attempt, and giving back an order whose
/// lease ended without a completion — released at start-up (its daemon stopped) or rescued after
/// it expired (its node died or was cut off).
public enum LeaseRules {
    /// Leases a due order for one attempt of `request.kind`: `pending` becomes `verifying`,
    /// `verified` stays (delivery); the attempt is counted when `request.charge`.
    public static func claim(_ record: OrderRecord, _ request: ClaimRequest, owner: String, now: Date) -> (plan: OrderPlan, order: ClaimedOrder) {
        let kind = request.kind
        let charge = request.charge
        var after = record
        after.state = kind.isVerification ? .verifying : .verified
        after.lease = OrderRecord.Lease(owner: owner, until: request.leaseUntil, proofRevision: record.proofRevision)
        after.nextAttemptAt = nil
        after.updatedAt = now
        if charge { if kind.isVerification { after.attempts += 1 } else { after.deliveryAttempts += 1 } }
        var plan = OrderPlan(record: after)
        if kind.isVerification {
            plan.transitions.append(PlannedTransition(
                at: now, actor: .daemon, from: record.state, to: after.state,
                reason: charge ? Reason(.attempt, detail: "attempt \(after.attempts)") : Reason(.probe, detail: "circuit probe (not charged)")))
        }
        let order = ClaimedOrder(
            reference: record.reference, orderID: record.orderID, productID: record.productID, kind: kind, proof: record.proof,
            applicationUsername: record.applicationUsername, userID: record.userID, amount: record.amount, currency: record.currency,
            createdAt: record.createdAt, receivedAt: record.receivedAt, attempt: after.attempts(kind), charged: charge,
            malformedAnswers: record.malformedAnswers, grant: record.grant, proofRevision: record.proofRevision, origin: record.origin)
        return (plan, order)
    }

    /// Why a lease ended without its completion.
    public enum Ending: Sendable, Hashable {
        /// The daemon that held it stopped (released at the next start).
        case released
        /// It expired: another node gives the order back (the attempt counts: its request may
        /// have been sent).
        case expired
    }

    /// Gives back an order whose lease ended: `verifying` → `pending`, a delivery stays
    /// `verified`, both due now; an operator's deferred action applies then.
    public static func end(_ record: OrderRecord, _ ending: Ending, now: Date, lookups: some RuleLookups) throws -> OrderPlan {
        var after = record
        after.state = record.state == .verifying ? .pending : record.state
        after.lease = nil
        if after.state == .pending || after.state == .verified { after.nextAttemptAt = now }
        after.updatedAt = now
        var plan = OrderPlan(record: after)
        if record.state == .verifying {
            let reason = switch ending {
            case .released: Reason(.leaseReleased, detail: "the daemon stopped during an attempt; the order is due again")
            case .expired: Reason(.leaseExpired, detail: "the lease of \(record.lease?.owner ?? "its node") expired during an attempt; the order is due again")
            }
            plan.transitions.append(PlannedTransition(at: now, actor: .daemon, from: .verifying, to: .pending, reason: reason))
        }
        if let deferred = after.deferredAction {
            _ = try OperatorRules.applyDeferred(deferred, to: &plan, now: now, lookups: lookups)
        }
        return plan
    }
}
