import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// What the daemon asks of the scheduler from outside its loop: wake it, reload, watch the
/// clock, heartbeats and change notices, stop, status.
extension Scheduler {
    /// Wakes the loop: new orders, an operator's action, a commit that may have kept a purchase
    /// the phone never sent (its grace end is read again).
    public nonisolated func nudge() {
        discoveryNudged.store(true, ordering: .releasing)
        wake.signal()
    }

    /// Takes new settings and senders (a reload): limits change, open circuits become
    /// half-open, and pauses after a 429 end (DESIGN §6), so that the new configuration is tried
    /// at once.
    public func apply(_ settings: Settings, senders: Senders) {
        self.settings = settings
        self.senders = senders
        let now = clock.instant()
        admission.reconfigure(Self.limits(settings, share: coordinator.share), endpoints: senders.endpoints, now: now)
        admission.reload(now: now)
        finishUndeliverable()
        wake.signal()
    }

    /// Without a delivery URL (removed by a reload, or none at start after orders were verified
    /// under one), verified orders finish at once (DESIGN §5): those waiting out a delivery
    /// backoff are made due now, and the next turns finish them without sending anything.
    func finishUndeliverable() {
        // On a shared store the deliveries are every node's: one node's configuration (a
        // rollout half done) must not finish the others' paid deliveries undelivered.
        guard senders.delivery == nil, !coordinator.leavesUnconfiguredWorkToOthers else { return }
        do {
            let moved = try store.clampNextAttempts(of: [.deliver], notAfter: storeNow())
            if moved > 0 {
                logger.notice("no delivery URL is configured: \(Plural.count(moved, "verified order")) waiting to be delivered finish now")
            }
        } catch {
            logger.error(
                "cannot bring deliveries forward: \(error); verified orders finish when they are due",
                [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
    }

    /// Calls `beat` from the loop at least every `interval` (the systemd watchdog): a wedged loop
    /// stops calling it.
    public func setHeartbeat(every interval: Duration, _ beat: @escaping @Sendable () -> Void) {
        heartbeatInterval = interval
        heartbeat = beat
        wake.signal()
    }

    /// Calls `changed` after every turn that moved orders (claims, outcomes) and after every
    /// circuit change: the daemon's status line and metrics are refreshed from it.
    public func setChangeObserver(_ changed: @escaping @Sendable () -> Void) {
        changeObserver = changed
    }

    /// How far the wall clock must move against the monotonic one to count as a step (seconds).
    static let clockStep = 60.0

    /// Wall-clock seconds minus monotonic seconds since the scheduler was made: constant until
    /// the wall clock steps.
    func wallClockOffset() -> Double {
        clock.now().timeIntervalSince1970 - (clock.instant() - madeAt).inSeconds
    }

    /// The wall clock was set: re-evaluate what is due, and after a step back bring far-off
    /// attempts forward so that the queue does not stall for the length of the step.
    public func clockChanged() {
        let offset = wallClockOffset()
        let step = offset - wallOffset
        wallOffset = offset
        if abs(step) > Self.clockStep, coordinator.hostClockStepped(by: step) {
            // Due times are on the shared store's clock: this host's step moves nothing there.
            logger.notice(
                "the wall clock stepped \(step < 0 ? "back" : "forward") by \(TimeSpan.format(.seconds(abs(step).rounded()))); due times are the shared store's, nothing moved",
                [.reason: ReasonCode.clockStep.rawValue])
        } else if step < -Self.clockStep {
            let limit = storeNow().addingTimeInterval(settings.resolver.policy.backoff.maxDelay.inSeconds)
            do {
                let moved = try store.clampNextAttempts(notAfter: limit)
                logger.warning(
                    "the wall clock stepped back by \(TimeSpan.format(.seconds((-step).rounded()))); \(Plural.count(moved, "order")) scheduled beyond MaxDelay brought forward",
                    [.reason: ReasonCode.clockStep.rawValue])
            } catch {
                logger.error(
                    "the wall clock stepped back by \(TimeSpan.format(.seconds((-step).rounded()))), and orders scheduled beyond MaxDelay could not be brought forward: \(error); they wait for their own times",
                    [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
            }
        } else if step > Self.clockStep {
            logger.notice("the wall clock stepped forward by \(TimeSpan.format(.seconds(step.rounded()))); re-evaluating what is due", [.reason: ReasonCode.clockStep.rawValue])
        }
        wake.signal()
    }

    /// Stops taking work, lets in-flight attempts finish for up to `drainTimeout`, commits their
    /// outcomes; returns when ``run()`` has ended. Attempts still running after that keep their
    /// leases until the next start.
    public func stop(drainTimeout: Duration) async {
        drainDeadline = clock.instant() + drainTimeout
        stopping = true
        wake.signal()
        guard !stopped else { return }
        await withCheckedContinuation { stopWaiters.append($0) }
    }

    /// An operator's `reconcilectl circuit ENDPOINT --probe-now | --close`: the circuit is
    /// steered, the loop woken (a probe or the waiting orders go now), and the change logged
    /// with who asked. Returns the circuit's state after, and whether it changed; `nil` when
    /// the configuration has no such endpoint.
    public func steerCircuit(_ endpoint: VerificationEndpoint, _ action: CircuitAction, actor: String) -> (state: String, changed: Bool)? {
        let now = clock.instant()
        let previous = admission.states(now: now).first { $0.endpoint == endpoint }?.circuit
        // An open circuit parks the orders that fail meanwhile until its cool-down's end.
        let parkedUntil: Date? = if case .open(let until)? = previous { storeNow().addingTimeInterval((until - now).inSeconds) } else { nil }
        guard let changed = admission.steer(endpoint, action, now: now) else { return nil }
        let after = admission.states(now: now).first { $0.endpoint == endpoint }?.circuit.description ?? "closed"
        if changed {
            var what = action == .close ? "closed the \(endpoint.rawValue) circuit" : "ended the \(endpoint.rawValue) circuit's cool-down: its probe goes now"
            if action == .close, let parkedUntil {
                // Closed by hand, those orders go now too (within a second of the cool-down's
                // end: the conversion from the monotonic clock is not exact to the millisecond).
                let kinds: [WorkKind] = switch endpoint {
                case .production, .sandbox, .merchant: [.verify, .verifyPlay]
                case .googlePlay, .googlePlayToken: [.verifyPlay]
                case .delivery: [.deliver]
                case .revocation: []
                }
                do {
                    let moved = try store.makeDue(
                        of: kinds, dueFrom: parkedUntil.addingTimeInterval(-1), to: parkedUntil.addingTimeInterval(1), now: storeNow())
                    if moved > 0 { what += "; orders it had parked, due now: \(moved)" }
                } catch {
                    logger.warning("closing the \(endpoint.rawValue) circuit: cannot make its parked orders due now: \(error); they go at their time")
                }
            }
            logger.notice("\(actor) \(what) (it was \(previous?.description ?? "unknown"))", [.endpoint: endpoint.rawValue, .actor: actor])
            wake.signal()
            changeObserver?()
        }
        return (after, changed)
    }

    /// A snapshot for `reconcilectl status` and the metrics file.
    public func status() -> SchedulerStatus {
        let mono = clock.instant()
        let wall = clock.now()
        func date(_ time: ContinuousClock.Instant) -> Date { wall.addingTimeInterval((time - mono).inSeconds) }
        let endpoints = admission.states(now: mono).map { state in
            var until: Date?
            if case .open(let time) = state.circuit { until = date(time) }
            return SchedulerStatus.Endpoint(
                endpoint: state.endpoint, circuit: state.circuit.description, openUntil: until, lastReason: state.lastReason,
                openings: state.openings, pausedUntil: state.pausedUntil.map(date), consecutiveFailures: state.consecutiveFailures,
                lastFailure: state.lastFailure)
        }
        var durations = requestDurations
        for state in endpoints where durations[state.endpoint] == nil { durations[state.endpoint] = LatencyHistogram() }
        var status = SchedulerStatus(inFlight: inFlight, endpoints: endpoints, counters: counters, requestDurations: durations)
        status.storeUnreachableSince = storeTrouble.flatMap { $0.unreachable ? $0.since : nil }
        status.storeProblem = storeTrouble?.message
        status.cluster = coordinator.status(maxInFlight: maxInFlight(.main))
        return status
    }

}
