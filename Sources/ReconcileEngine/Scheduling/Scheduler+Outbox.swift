import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// The outbox's share of the scheduler (DESIGN §5a): due actions leased per endpoint through the
/// same admission as orders (circuit and bucket of the action's endpoint, the section's
/// `MaxInFlight=`), sent by their endpoint's sender — Google Play's follow-ups by `[GooglePlay]`,
/// revocation notices by `[Revocation]` — and their outcomes committed by the next turn.
extension Scheduler {
    /// How many due actions of one endpoint the turn leases.
    struct ActionClaim {
        var endpoint: VerificationEndpoint
        /// `nil`: no sender is configured for the endpoint and its actions are skipped
        /// (``OutboxResolver/withoutSender(_:)``): leased uncharged, without a slot or a token.
        var sender: (any OutboxSender)?
        var limit: Int
        var probe: Bool
        var pool: Pool
    }

    /// An endpoint the outbox sends to in this configuration: its sender, the pool its attempts
    /// count against and the endpoints its requests need first.
    struct OutboxRoute {
        var sender: any OutboxSender
        var pool: Pool
        var gating: [VerificationEndpoint]
    }

    /// Every configured sender: Google Play's follow-ups in `[GooglePlay]`'s pool, revocation
    /// notices and consumption answers in `[Verifier]`'s (`main`: its `MaxInFlight=`, 16 unless set).
    var outboxRoutes: [OutboxRoute] {
        var routes: [OutboxRoute] = []
        if let play = senders.googlePlay {
            routes.append(OutboxRoute(sender: play, pool: .googlePlay, gating: play.gatingEndpoints))
        }
        if let revocation = senders.revocation { routes.append(OutboxRoute(sender: revocation, pool: .main, gating: [])) }
        for consumption in senders.consumption { routes.append(OutboxRoute(sender: consumption, pool: .main, gating: [])) }
        return routes
    }

    /// Endpoints whose actions are skipped while they have no sender (a revocation notice
    /// without `[Revocation] URL=`). On a shared store a node without the URL leaves them to the
    /// nodes that have one, as it does deliveries (DESIGN §7).
    var skippedOutboxEndpoints: [VerificationEndpoint] {
        guard !coordinator.leavesUnconfiguredWorkToOthers else { return [] }
        let routed = Set(outboxRoutes.map(\.sender.endpoint))
        return VerificationEndpoint.allCases.filter { !routed.contains($0) && OutboxResolver.skipReasonWithoutSender($0) != nil }
    }

    /// The resolver of outbox outcomes: the retry policy's backoff and `MaxAttempts`.
    var outboxResolver: OutboxResolver { OutboxResolver(policy: settings.resolver.policy) }

    /// What the outbox may lease now, per endpoint, from `slots` (each pool's share is taken):
    /// each sender's due actions as its own endpoint's circuit and bucket admit them (one probe
    /// per endpoint at a time), and the actions of an endpoint without a sender to skip.
    func planActionClaims(slots: inout [Pool: Int], now: Date, mono: ContinuousClock.Instant, wakeTimes: inout [ContinuousClock.Instant]) throws -> [ActionClaim] {
        var claims: [ActionClaim] = []
        for route in outboxRoutes {
            let endpoint = route.sender.endpoint
            guard slots[route.pool, default: 0] > 0 else { continue }  // a completion wakes the loop
            guard let due = try store.nextActionDueTime(endpoint: endpoint) else { continue }
            if due > now {
                wakeTimes.append(mono + .seconds(due.timeIntervalSince(now)))
                continue
            }
            guard let cap = dependencyCap(route.gating, mono: mono, wakeTimes: &wakeTimes) else { continue }
            switch admission.admit(endpoint, slots: min(slots[route.pool, default: 0], cap), now: mono) {
            case .wait(let until):
                if let until { wakeTimes.append(until) }
            case .claim(let limit, let probe):
                slots[route.pool, default: 0] -= limit
                claims.append(ActionClaim(endpoint: endpoint, sender: route.sender, limit: limit, probe: probe, pool: route.pool))
            }
        }
        for endpoint in skippedOutboxEndpoints {
            guard let due = try store.nextActionDueTime(endpoint: endpoint) else { continue }
            if due > now {
                wakeTimes.append(mono + .seconds(due.timeIntervalSince(now)))
                continue
            }
            claims.append(ActionClaim(endpoint: endpoint, sender: nil, limit: EndpointAdmission.maximumClaim, probe: false, pool: .main))
        }
        return claims
    }

    /// Leases what `claim` asks for and queues (or probes with) it; actions without a sender are
    /// resolved at once, committed by the next turn.
    func claimActions(_ claim: ActionClaim, now: Date, mono: ContinuousClock.Instant, wakeTimes: inout [ContinuousClock.Instant]) throws {
        let lease = now.addingTimeInterval(settings.requestTimeout.inSeconds * 4 + 60)
        let claimed = try store.claimActions(
            endpoint: claim.endpoint, now: now, limit: claim.limit, owner: owner, leaseUntil: lease, charge: !claim.probe && claim.sender != nil)
        if claim.probe && claimed.isEmpty { admission.probeAbandoned(claim.endpoint) }
        if claimed.count == claim.limit && !claim.probe { wakeTimes.append(mono) }  // more may be due at once
        guard let sender = claim.sender else {
            for action in claimed {
                guard let completion = OutboxResolver.withoutSender(action) else { continue }
                pendingActionCompletions.append(completion)
            }
            if !claimed.isEmpty { wakeTimes.append(mono) }  // their completions, next turn
            return
        }
        for action in claimed {
            dispatch(ReadyItem(work: .action(action, sender), endpoint: claim.endpoint, pool: claim.pool), probe: claim.probe, mono: mono)
        }
    }

    /// An outbox attempt ended: resolved now, committed by the next turn.
    func finished(_ claimed: ClaimedAction, _ outcome: OutboxOutcome, endpoint: VerificationEndpoint, pool: Pool) {
        inFlightByPool[pool, default: 0] -= 1
        guard !attemptsCancelled else { return }  // as an order's (``Scheduler/finished(_:_:endpoint:pool:)``)
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
    func commitActions(wakeTimes: inout [ContinuousClock.Instant], atStop: Bool = false) {
        // While the store fails, the turn's own calls find out when it answers again (with the
        // store's backoff); trying here as well would only hasten the retries and the log lines.
        guard !pendingActionCompletions.isEmpty, storeTrouble == nil || atStop else { return }
        let batch = pendingActionCompletions
        pendingActionCompletions.removeAll()
        do {
            let results = try store.completeActions(batch, owner: owner, now: storeNow())
            reporter.committed(batch, results)
            wakeTimes.append(clock.instant())  // a retry may be due at once
            changeObserver?()
        } catch {
            pendingActionCompletions = batch + pendingActionCompletions
            let delay = storeFailed(error)
            wakeTimes.append(clock.instant() + delay)
        }
    }

    /// Commits every pending outbox outcome (at stop, after the loop has ended).
    func flushActions() {
        var ignored: [ContinuousClock.Instant] = []
        commitActions(wakeTimes: &ignored, atStop: true)
        if !pendingActionCompletions.isEmpty {
            logger.error(
                "cannot commit \(Plural.count(pendingActionCompletions.count, "outbox outcome")) at stop; the actions are sent again at the next start",
                id: .storeUnavailable)
        }
    }
}
