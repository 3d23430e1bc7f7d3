import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// What verifiers ask between the requests of one attempt (a bounce, another page): a token and
/// the circuit's permission; and what each exchange said about its endpoint.
extension Scheduler: EndpointGate {
    public func acquire(_ endpoint: VerificationEndpoint) async -> Bool {
        while !stopping {
            let mono = clock.instant()
            switch admission.acquire(endpoint, now: mono) {
            case .granted: return true
            case .blocked: return false
            case .retry(let at): try? await clock.sleep(until: at)
            }
        }
        return false
    }

    /// The scheduler's wall clock.
    public nonisolated func now() -> Date {
        clock.now()
    }

    /// Most answers say a healthy endpoint is healthy, which changes nothing: those return
    /// without waiting for the scheduler (busy in a turn's commit, it would add that commit to
    /// every request's time). Everything else is handled on the scheduler, in the order it came.
    public nonisolated func report(
        _ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool
    ) async {
        await report(endpoint, observation, retryAfter: retryAfter, rateLimited: rateLimited, order: nil)
    }

    /// ``report(_:_:retryAfter:rateLimited:)`` of a request for `order` (see ``OrderGate``).
    nonisolated func report(
        _ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool, order: Int64?
    ) async {
        let healthy = if case .healthy = observation { !rateLimited } else { false }
        if healthy && quietEndpoints.skipsHealthy(endpoint) {
            quietEndpoints.skipped(endpoint, at: clock.instant())
            return
        }
        if !healthy { quietEndpoints.failureQueued(endpoint) }
        await reportOnScheduler(endpoint, observation, retryAfter: retryAfter, rateLimited: rateLimited, queued: !healthy, order: order)
    }

    func reportOnScheduler(
        _ endpoint: VerificationEndpoint, _ observation: EndpointObservation, retryAfter: Duration?, rateLimited: Bool, queued: Bool,
        order: Int64? = nil
    ) {
        // A cancelled attempt's failure is the cancellation's, not the endpoint's.
        guard !attemptsCancelled else { return }
        if queued { quietEndpoints.failureArrived(endpoint) }
        if let skipped = quietEndpoints.lastSkipped(endpoint) { admission.answeredHealthily(endpoint, at: skipped) }
        if rateLimited {
            let pause = admission.pause(endpoint, retryAfter: retryAfter, now: clock.instant())
            let capped = pause.capped ? " (Retry-After asked for \(TimeSpan.format(retryAfter ?? .zero)); capped at CircuitMaxCooldown)" : ""
            logger.notice(
                "\(endpoint.rawValue) answered 429; sending nothing there for \(TimeSpan.format(pause.duration))\(capped)",
                [.endpoint: endpoint.rawValue, .reason: ReasonCode.http(429).rawValue])
            changeObserver?()
        }
        observe(endpoint, observation, order: order)
    }

    /// Feeds the endpoint's circuit; logs and announces an opening or closing. A failure that
    /// follows its order (``FailureAttribution``) is remembered, to be charged to it.
    func observe(_ endpoint: VerificationEndpoint, _ observation: EndpointObservation, order: Int64? = nil) {
        let (change, blame) = admission.observeAttributed(endpoint, observation, order: order, now: clock.instant())
        quietEndpoints.update(endpoint, quiet: admission.isQuiet(endpoint))
        if blame == .order, let order {
            blamed.insert(order)
        }
        switch change {
        case .none:
            return
        case .opened(let cooldown, let reason), .reopened(let cooldown, let reason):
            let fields: KeyValuePairs<LogField, String?> = [.endpoint: endpoint.rawValue, .reason: reason.description]
            let verb = { if case .reopened = change { "re-opened" } else { "opened" } }()
            let message = cooldown > .zero
                ? "circuit for \(endpoint.rawValue) \(verb) (\(reason)); nothing is sent there for \(TimeSpan.format(cooldown)), then one probe"
                : "circuit for \(endpoint.rawValue) \(verb) (\(reason)); it answered other orders a moment ago, so one probe with another order goes at once"
            if case .configuration = observation {
                logger.error(message + " — fix the configuration, then `reconcilectl reload`", id: .circuitOpened, fields)
            } else {
                logger.warning(message, id: .circuitOpened, fields)
            }
        case .closed:
            logger.notice("circuit for \(endpoint.rawValue) closed: the probe succeeded", id: .circuitClosed, [.endpoint: endpoint.rawValue])
        }
        changeObserver?()
        wake.signal()
    }

}
