import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Outbox resolver: a sender's verdict turned into what the store applies")
struct OutboxResolverTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let resolver = OutboxResolver(
        policy: RetryPolicy(
            backoff: Backoff(initialDelay: .seconds(30), multiplier: 2, maxDelay: .seconds(3600), jitter: .none),
            maxAttempts: 3, maxAge: .seconds(86_400)))

    func claimed(attempts: Int = 1, charged: Bool = true) -> ClaimedAction {
        ClaimedAction(
            action: OutboxAction(
                orderID: "A1", kind: .playAcknowledge, endpoint: .googlePlay, idempotencyKey: "A1:play_acknowledge", payload: "{}",
                attempts: attempts, createdAt: now, updatedAt: now),
            productID: "gems", proof: OrderProof(purchaseToken: "tok"), charged: charged)
    }

    func resolve(_ verdict: OutboxOutcome.Verdict, _ claimed: ClaimedAction) -> OutboxCompletion {
        var random = SeededRandomSource(seed: 1)
        return resolver.resolve(OutboxOutcome(records: [], verdict: verdict), for: claimed, now: now, retryAt: now + 5, random: &random)
    }

    @Test("done, skipped and escalate pass through, charged as claimed")
    func terminal() {
        #expect(resolve(.done(Reason(.acknowledged)), claimed()).resolution == .done(Reason(.acknowledged)))
        #expect(resolve(.skipped(Reason(.alreadyAcknowledged)), claimed()).resolution == .skipped(Reason(.alreadyAcknowledged)))
        #expect(resolve(.escalate(Reason(.play(410))), claimed()).resolution == .escalate(Reason(.play(410))))
        #expect(resolve(.done(Reason(.acknowledged)), claimed()).charged)
        #expect(!resolve(.done(Reason(.acknowledged)), claimed(charged: false)).charged)
    }

    @Test("transient: the endpoint's backoff, then MaxAttempts escalates; Retry-After is honoured")
    func transient() {
        #expect(resolve(.transient(Reason(.playHTTP(503))), claimed(attempts: 1)).resolution == .retry(at: now + 30, reason: Reason(.playHTTP(503))))
        #expect(resolve(.transient(Reason(.playHTTP(503))), claimed(attempts: 2)).resolution == .retry(at: now + 60, reason: Reason(.playHTTP(503))))
        guard case .escalate(let reason) = resolve(.transient(Reason(.playHTTP(503))), claimed(attempts: 3)).resolution else {
            Issue.record("the third failure escalates")
            return
        }
        #expect(reason.code == ReasonCode.maxAttempts)
        if case .retry(let at, _) = resolve(.transient(Reason(.play(429)), retryAfter: .seconds(600)), claimed(attempts: 1)).resolution {
            #expect(at >= now + 600)
        } else {
            Issue.record("429 retries")
        }
    }

    @Test("configuration errors, requests never sent and probes charge nothing and wait for the circuit's probe time, whatever the attempts")
    func uncharged() {
        for verdict in [OutboxOutcome.Verdict.configuration(Reason(.tokenHTTP(400, error: "invalid_grant"))), .notSent(Reason(.circuitOpen))] {
            let completion = resolve(verdict, claimed(attempts: 3))
            #expect(!completion.charged)
            guard case .retry(let at, _) = completion.resolution else {
                Issue.record("\(verdict) is retried")
                continue
            }
            #expect(at == now + 5)
        }
        // A probe's transient failure never escalates.
        #expect(resolve(.transient(Reason(.playHTTP(503))), claimed(attempts: 3, charged: false)).resolution == .retry(at: now + 5, reason: Reason(.playHTTP(503))))
    }
}

/// DESIGN §5a: "Without a URL the event is only logged and recorded" — a revocation notice with
/// no sender is skipped; every other action waits for its sender.
@Suite("Outbox resolver: actions without a configured sender")
struct OutboxWithoutSenderTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func claimed(_ kind: OutboxKind, _ endpoint: VerificationEndpoint, charged: Bool = false) -> ClaimedAction {
        ClaimedAction(
            action: OutboxAction(
                orderID: "A1", kind: kind, endpoint: endpoint, idempotencyKey: "A1:\(kind.rawValue)", payload: "{}", attempts: 0,
                createdAt: now, updatedAt: now),
            productID: "gems", proof: OrderProof(), charged: charged)
    }

    @Test("a revocation notice without [Revocation] URL= is skipped (no_revocation_url), not charged; the store marks it skipped")
    func revocationSkipped() throws {
        let action = claimed(.revocationNotice, .revocation)
        let completion = try #require(OutboxResolver.withoutSender(action))
        guard case .skipped(let reason) = completion.resolution else {
            Issue.record("not skipped: \(completion.resolution)")
            return
        }
        #expect(reason.code == .noRevocationURL && reason.detail?.contains("[Revocation] URL=") == true)
        #expect(!completion.charged)

        // Applied under its lease: skipped, attempts unchanged.
        var leased = OutboxRules.claim(action.action, owner: "me", leaseUntil: now + 60, charge: false, now: now)
        leased.state = .pending
        let (after, result) = OutboxRules.complete(completion, for: leased, owner: "me", now: now + 1)
        #expect(after?.state == .skipped && after?.reason == .noRevocationURL && after?.attempts == 0 && after?.lease == nil)
        #expect(result.applied && result.state == .skipped)
    }

    @Test("a Play follow-up without [GooglePlay] waits for it: nothing is decided")
    func othersWait() {
        #expect(OutboxResolver.withoutSender(claimed(.playAcknowledge, .googlePlay)) == nil)
        #expect(OutboxResolver.withoutSender(claimed(.playConsume, .googlePlay)) == nil)
        for endpoint in VerificationEndpoint.allCases where endpoint != .revocation {
            #expect(OutboxResolver.skipReasonWithoutSender(endpoint) == nil, "\(endpoint)")
        }
    }
}
