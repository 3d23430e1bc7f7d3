import Foundation

/// Orders `waiting` for proof a verifier can use (DESIGN §3, §6): they expire after `MaxAge`,
/// and become `pending` when a reload (or a restart) brings a verifier that can use it — another
/// `Kind=`, or the section (`[GooglePlay]`, `[Verifier]`) they waited for.
public enum WaitingRules {
    /// A `waiting` order past `MaxAge` → `expired`.
    public static func expire(_ record: OrderRecord, now: Date) -> (plan: OrderPlan, result: CompletionResult) {
        var after = record
        after.state = .expired
        after.reason = .maxAge
        after.updatedAt = now
        after.nextAttemptAt = nil
        let plan = OrderPlan(record: after, transitions: [PlannedTransition(
            at: now, actor: .daemon, from: .waiting, to: .expired, reason: Reason(.maxAge, detail: "no usable proof arrived within MaxAge"))])
        let result = CompletionResult(
            orderID: record.orderID, productID: record.productID, from: .waiting, to: .expired,
            reason: Reason(.maxAge, detail: "no usable proof arrived within MaxAge"), attempts: record.attempts)
        return (plan, result)
    }

    /// A `waiting` order whose proof `kind` can verify → `pending`, due now; `nil` when it cannot.
    public static func promote(_ record: OrderRecord, usableBy kind: VerifierKind, now: Date) -> OrderPlan? {
        promote(record, usableBy: ConfiguredVerifiers(kind: kind), now: now)
    }

    /// A `waiting` order whose proof one of `verifiers` can verify → `pending`, due now; `nil`
    /// when none can.
    public static func promote(_ record: OrderRecord, usableBy verifiers: ConfiguredVerifiers, now: Date) -> OrderPlan? {
        guard record.state == .waiting, record.proof.isUsable(by: verifiers) else { return nil }
        var after = record
        after.state = .pending
        after.nextAttemptAt = now
        after.reason = .verifierChanged
        after.updatedAt = now
        let which = record.proof.isGooglePlay && verifiers.googlePlay ? "[GooglePlay]" : verifiers.kind.map { "Kind=\($0.rawValue)" } ?? "\(verifiers)"
        return OrderPlan(record: after, transitions: [PlannedTransition(
            at: now, actor: .daemon, from: .waiting, to: .pending,
            reason: Reason(.verifierChanged, detail: "\(which) can verify the proof this order carries"))])
    }
}
