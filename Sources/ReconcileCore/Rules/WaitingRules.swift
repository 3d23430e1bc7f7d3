import Foundation

/// Orders `waiting` for proof the verifier can use (DESIGN §3, §6): they expire after `MaxAge`,
/// and become `pending` when a reload (or a restart) changes `Kind=` to one that can use it.
public enum WaitingRules {
    /// A `waiting` order past `MaxAge` → `expired`.
    public static func expire(_ record: OrderRecord, now: Date) -> (plan: OrderPlan, result: CompletionResult) {
        var after = record
        after.state = .expired
        after.reason = "max_age"
        after.updatedAt = now
        after.nextAttemptAt = nil
        let plan = OrderPlan(record: after, transitions: [PlannedTransition(
            at: now, actor: .daemon, from: .waiting, to: .expired, reason: Reason("max_age", detail: "no usable proof arrived within MaxAge"))])
        let result = CompletionResult(
            orderID: record.orderID, productID: record.productID, from: .waiting, to: .expired,
            reason: Reason(ReasonCode.maxAge, detail: "no usable proof arrived within MaxAge"), attempts: record.attempts)
        return (plan, result)
    }

    /// A `waiting` order whose proof `kind` can verify → `pending`, due now; `nil` when it cannot.
    public static func promote(_ record: OrderRecord, usableBy kind: VerifierKind, now: Date) -> OrderPlan? {
        guard record.state == .waiting, record.proof.isUsable(by: kind) else { return nil }
        var after = record
        after.state = .pending
        after.nextAttemptAt = now
        after.reason = "verifier_changed"
        after.updatedAt = now
        return OrderPlan(record: after, transitions: [PlannedTransition(
            at: now, actor: .daemon, from: .waiting, to: .pending,
            reason: Reason("verifier_changed", detail: "Kind=\(kind.rawValue) can verify the proof this order carries"))])
    }
}
