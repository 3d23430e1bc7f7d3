import Foundation
import ReconcileFoundation

/// Turns a sender's verdict into what the store applies: transient failures are sent again
/// after the endpoint's backoff until `MaxAttempts`, then escalated; configuration errors,
/// probes and requests never sent charge nothing (DESIGN §5a, §6). An action has no `MaxAge`:
/// it is owed for as long as its order stays finished.
public struct OutboxResolver: Sendable {
    public var policy: RetryPolicy

    public init(policy: RetryPolicy) {
        self.policy = policy
    }

    /// - Parameter retryAt: when an uncharged action is due again (its circuit's probe time).
    public func resolve<R: RandomSource>(
        _ outcome: OutboxOutcome, for claimed: ClaimedAction, now: Date, retryAt: Date, random: inout R
    ) -> OutboxCompletion {
        func completion(_ resolution: OutboxCompletion.Resolution, charged: Bool = claimed.charged) -> OutboxCompletion {
            OutboxCompletion(claimed: claimed, records: outcome.records, resolution: resolution, charged: charged)
        }
        switch outcome.verdict {
        case .done(let reason):
            return completion(.done(reason))
        case .skipped(let reason):
            return completion(.skipped(reason))
        case .escalate(let reason):
            return completion(.escalate(reason))
        case .configuration(let reason), .notSent(let reason):
            return completion(.retry(at: max(retryAt, now), reason: reason), charged: false)
        case .transient(let reason, let retryAfter):
            let attempts = claimed.action.attempts
            guard claimed.charged else { return completion(.retry(at: max(retryAt, now), reason: reason)) }
            if attempts >= policy.maxAttempts {
                return completion(.escalate(Reason(
                    .maxAttempts, detail: "\(attempts) attempts reached MaxAttempts (last: \(reason))")))
            }
            let delay = policy.backoff.delay(afterAttempt: max(1, attempts), retryAfter: retryAfter, random: &random)
            return completion(.retry(at: now.addingTimeInterval(delay.inSeconds), reason: reason))
        }
    }

    /// What becomes of a due action whose endpoint has no sender in this configuration.
    ///
    /// A revocation notice without `[Revocation] URL=` is skipped (`no_revocation_url`, not
    /// charged): DESIGN §5a says that without a URL the event is only logged and recorded, so
    /// a URL configured later does not send old events. Every other action waits (`nil`): a Play
    /// follow-up is owed to Google whatever the configuration, and is sent once `[GooglePlay]`
    /// is back.
    public static func withoutSender(_ claimed: ClaimedAction) -> OutboxCompletion? {
        guard let reason = skipReasonWithoutSender(claimed.action.endpoint) else { return nil }
        return OutboxCompletion(claimed: claimed, resolution: .skipped(reason), charged: false)
    }

    /// Why actions of `endpoint` are skipped while no sender for it is configured; `nil`: they
    /// wait for one.
    public static func skipReasonWithoutSender(_ endpoint: VerificationEndpoint) -> Reason? {
        switch endpoint {
        case .revocation:
            Reason(.noRevocationURL, detail: "[Revocation] URL= is not configured: the event is only logged and recorded")
        case .production, .sandbox, .merchant, .delivery, .googlePlay, .googlePlayToken:
            nil
        }
    }
}
