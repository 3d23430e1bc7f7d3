import Foundation
import ReconcileCore
import ReconcileSystem

/// The outbox's share of the scheduler (DESIGN §5a): due actions leased per endpoint through the
/// same admission as orders (circuit and bucket of the action's endpoint, the section's
/// `MaxInFlight=`), sent by their endpoint's sender, and their outcomes committed by the next
/// turn.
extension Scheduler {
    /// How many due actions of one endpoint the turn leases.
    struct ActionClaim {
        var endpoint: VerificationEndpoint
        var sender: any OutboxSender
        var limit: Int
        var probe: Bool
    }

    /// The resolver of outbox outcomes: the retry policy's backoff and `MaxAttempts`.
    var outboxResolver: OutboxResolver { OutboxResolver(policy: settings.resolver.policy) }

    /// What the outbox may lease now, from `slots` (its pool's share is taken).
    func planActionClaim(slots: inout [Pool: Int], now: Date, mono: Double, wakeTimes: inout [Double]) throws -> ActionClaim? {
        guard let play = settings.googlePlay, slots[.googlePlay, default: 0] > 0 else { return nil }
        let endpoint = play.verifier.endpoint
        guard let due = try store.nextActionDueTime(endpoint: endpoint) else { return nil }
        if due > now {
            wakeTimes.append(mono + due.timeIntervalSince(now))
            return nil
        }
        guard let cap = dependencyCap(play.verifier.gatingEndpoints, mono: mono, wakeTimes: &wakeTimes) else { return nil }
        switch admission.admit(endpoint, slots: min(slots[.googlePlay, default: 0], cap), now: mono) {
        case .wait(let until):
            if let until { wakeTimes.append(until) }
            return nil
        case .claim(let limit, let probe):
            slots[.googlePlay, default: 0] -= limit
            return ActionClaim(endpoint: endpoint, sender: play.verifier, limit: limit, probe: probe)
        }
    }

    /// Leases what `claim` asks for and queues (or probes with) it.
    func claimActions(_ claim: ActionClaim, now: Date, mono: Double, wakeTimes: inout [Double]) throws {
        let lease = now.addingTimeInterval(settings.requestTimeout.inSeconds * 4 + 60)
        let claimed = try store.claimActions(
            endpoint: claim.endpoint, now: now, limit: claim.limit, owner: owner, leaseUntil: lease, charge: !claim.probe)
        if claim.probe && claimed.isEmpty { admission.probeAbandoned(claim.endpoint) }
        if claimed.count == claim.limit && !claim.probe { wakeTimes.append(mono) }  // more may be due at once
        for action in claimed {
            dispatch(ReadyItem(work: .action(action, claim.sender), endpoint: claim.endpoint, pool: .googlePlay), probe: claim.probe, mono: mono)
        }
    }

    /// An outbox attempt ended: resolved now, committed by the next turn.
    func finished(_ claimed: ClaimedAction, _ outcome: OutboxOutcome, endpoint: VerificationEndpoint, pool: Pool) {
        inFlightByPool[pool, default: 0] -= 1
        reporter.requestsSent(outcome.records.count)
        for record in outcome.records {
            requestDurations[record.endpoint, default: LatencyHistogram()].record(record.latency)
        }
        pendingActionCompletions.append(outboxResolver.resolve(outcome, for: claimed, now: storeNow(), retryAt: retryTime(endpoint), random: &random))
        if !stopping { startReady() }
        wake.signal()
    }

    /// Commits the outbox outcomes that came in (their own transaction); on a store failure
    /// they wait for the next turn.
    func commitActions(wakeTimes: inout [Double], atStop: Bool = false) {
        // While the store fails, the turn's own calls find out when it answers again (with the
        // store's backoff); trying here as well would only hasten the retries and the log lines.
        guard !pendingActionCompletions.isEmpty, storeTrouble == nil || atStop else { return }
        let batch = pendingActionCompletions
        pendingActionCompletions.removeAll()
        do {
            let results = try store.completeActions(batch, owner: owner, now: storeNow())
            reporter.committed(batch, results)
            wakeTimes.append(clock.uptime())  // a retry may be due at once
            changeObserver?()
        } catch {
            pendingActionCompletions = batch + pendingActionCompletions
            let delay = storeFailed(error)
            wakeTimes.append(clock.uptime() + delay)
        }
    }

    /// Commits every pending outbox outcome (at stop, after the loop has ended).
    func flushActions() {
        var ignored: [Double] = []
        commitActions(wakeTimes: &ignored, atStop: true)
        if !pendingActionCompletions.isEmpty {
            logger.error(
                "cannot commit \(Plural.count(pendingActionCompletions.count, "outbox outcome")) at stop; the actions are sent again at the next start",
                id: .storeUnavailable)
        }
    }
}
