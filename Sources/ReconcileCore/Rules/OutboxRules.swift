import Foundation
import ReconcileFoundation

/// The outbox's rules (DESIGN §5a): which follow-ups a change owes (for now: Google Play's
/// acknowledgement or consumption of a finished order), leasing an action to send it, and what
/// its attempt's end does — done, skipped, sent again after a backoff, or escalated — with the
/// warning once a Play action still fails past its deadline. Stores read ``OutboxAction``s,
/// call these, and write what they return.
public enum OutboxRules {
    /// How long after the purchase a Play follow-up must have succeeded before the daemon warns:
    /// Google refunds purchases not acknowledged within three days, so a day is left to act.
    public static let playDeadline: TimeInterval = 48 * 3600

    /// The follow-ups a Google Play order owes Google as it finishes (`record` is the order
    /// after): a consumption with `Consume=yes`, else an acknowledgement with `Acknowledge=yes`;
    /// none when Google's answer said it is done already, and none for an order Google did not
    /// verify itself (a merchant's `Kind=http` grant, an operator's resolve).
    public static func playActions(for record: OrderRecord, followUp: PlayFollowUp, now: Date) -> [OutboxAction] {
        guard record.proof.isGooglePlay, record.finishedBy == .verifier || record.finishedBy == .delivery, let grant = record.grant
        else { return [] }
        let kind: OutboxKind
        if followUp.consume {
            guard grant.consumptionState != 1 else { return [] }
            kind = .playConsume
        } else if followUp.acknowledge {
            guard grant.acknowledgementState != 1 && grant.consumptionState != 1 else { return [] }
            kind = .playAcknowledge
        } else {
            return []
        }
        let packageName = record.proof.packageName ?? followUp.packageName
        let payload = JSONWriter.string(.object(JSONObject([
            "package_name": .string(orNull: packageName), "product_id": .string(grant.productID ?? record.productID),
        ])))
        let purchased = grant.purchaseDateMilliseconds.map(Date.init(outboxMilliseconds:)) ?? now
        return [OutboxAction(
            orderReference: record.reference, orderID: record.orderID, kind: kind, endpoint: .googlePlay,
            idempotencyKey: "\(record.orderID):\(kind.rawValue)", payload: payload, nextAttemptAt: now, createdAt: now, updatedAt: now,
            deadline: purchased.addingTimeInterval(playDeadline), reason: .queued,
            detail: "owed to Google since the order finished")]
    }

    /// An escalated action an operator retries: due now, its attempts from zero, its deadline
    /// warning given again if it fails past the deadline once more.
    public static func requeue(_ action: OutboxAction, actor: TransitionActor, now: Date) -> OutboxAction {
        var after = action
        after.state = .pending
        after.attempts = 0
        after.nextAttemptAt = now
        after.lease = nil
        after.warnedAt = nil
        after.updatedAt = now
        after.reason = .retry
        after.detail = "sent again by \(actor)"
        return after
    }

    /// A notice not sent yet (or given up on) that a later one about the same order replaces:
    /// the merchant only needs the latest word, and must never get an older one after it.
    public static func supersede(_ action: OutboxAction, by key: String, now: Date) -> OutboxAction {
        var after = action
        after.state = .skipped
        after.nextAttemptAt = nil
        after.lease = nil
        after.updatedAt = now
        after.reason = .superseded
        after.detail = "superseded by \(key): the merchant is told the latest word only"
        return after
    }

    /// Leases a due action for one attempt (counted when `charge`).
    public static func claim(
        _ action: OutboxAction, owner: String, leaseUntil: Date, charge: Bool, now: Date
    ) -> OutboxAction {
        var after = action
        after.lease = OutboxAction.Lease(owner: owner, until: leaseUntil)
        after.nextAttemptAt = nil
        after.updatedAt = now
        if charge { after.attempts += 1 }
        return after
    }

    /// What the end of an attempt does to the action as the store holds it now.
    ///
    /// - Returns: `nil` action when the lease is no longer `owner`'s: nothing may be written.
    public static func complete(
        _ completion: OutboxCompletion, for action: OutboxAction, owner: String, now: Date
    ) -> (action: OutboxAction?, result: OutboxResult) {
        var result = OutboxResult(
            orderID: action.orderID, kind: action.kind, endpoint: action.endpoint, state: action.state, reason: Reason(.leaseLost),
            attempts: action.attempts, applied: false, deadline: action.deadline)
        guard action.lease?.owner == owner, action.state == .pending else { return (nil, result) }
        var after = action
        after.lease = nil
        after.updatedAt = now
        // Probes, configuration errors and requests never sent are not charged.
        if !completion.charged && completion.claimed.charged { after.attempts = max(0, after.attempts - 1) }
        let reason: Reason
        switch completion.resolution {
        case .done(let why):
            after.state = .done
            reason = why
        case .skipped(let why):
            after.state = .skipped
            reason = why
        case .retry(let at, let why):
            after.nextAttemptAt = at
            reason = why
        case .escalate(let why):
            after.state = .escalated
            reason = why
        }
        after.reason = reason.code
        after.detail = reason.detail
        // Still failing past the deadline: warned once (err, and the escalation command). A
        // consumption answer's deadline ends it instead (its sender escalates it).
        if after.kind.hasRefundDeadline, after.state == .pending || after.state == .escalated, let deadline = after.deadline, now >= deadline, after.warnedAt == nil {
            after.warnedAt = now
            result.deadlineWarning = true
        }
        result.state = after.state
        result.reason = reason
        result.attempts = after.attempts
        result.nextAttemptAt = after.nextAttemptAt
        result.applied = true
        return (after, result)
    }

    /// An action whose lease ended without a completion (the daemon stopped while sending it):
    /// due again now. Its attempt stays counted: the request may have gone.
    public static func release(_ action: OutboxAction, now: Date) -> OutboxAction {
        var after = action
        after.lease = nil
        if after.state == .pending { after.nextAttemptAt = now }
        after.updatedAt = now
        return after
    }
}

extension Date {
    /// The date of a time in milliseconds since 1970 (as stores and Google keep them).
    init(outboxMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
