/// The state × event table of DESIGN §4, as a pure function.
///
/// Everything that changes an order's state goes through ``next(from:on:context:)``, so the
/// table lives in exactly one place. The store applies the outcome and records the transition with
/// its actor and reason.
public enum OrderLifecycle {
    /// What the order carries beyond its state that the table depends on.
    public struct Context: Sendable, Hashable {
        /// The state to return to: for `held`, the state it was held in; for `escalated`,
        /// `verified` when it was escalated during delivery.
        public var resumeState: OrderState?
        /// Whether the order has proof the configured verifier can use.
        public var hasUsableProof: Bool

        public init(resumeState: OrderState? = nil, hasUsableProof: Bool = true) {
            self.resumeState = resumeState
            self.hasUsableProof = hasUsableProof
        }
    }

    /// What applying an event does.
    public enum Outcome: Sendable, Hashable {
        /// The order moves to this state (possibly the same one, as `verified` after a failed
        /// delivery attempt).
        case moveTo(OrderState)
        /// The state does not change, but the event is taken (new proof on a held order or
        /// during an attempt is stored for later).
        case stay
        /// An operator action on an order whose attempt is in flight: applied when the attempt
        /// ends (the completion write is guarded by the lease).
        case deferred
    }

    /// The outcome of `event` on an order in `state`.
    ///
    /// - Throws: ``IllegalTransition`` naming the current state when the table has no entry.
    public static func next(
        from state: OrderState,
        on event: OrderEvent,
        context: Context = Context()
    ) throws(IllegalTransition) -> Outcome {
        let illegal = IllegalTransition(state: state, event: event)
        switch (state, event) {
        // MARK: proof arrives
        case (.waiting, .proofArrived), (.pending, .proofArrived),
            (.rejected, .proofArrived), (.expired, .proofArrived), (.escalated, .proofArrived):
            return .moveTo(.pending)
        case (.verifying, .proofArrived), (.held, .proofArrived):
            return .stay

        // MARK: due + attempt
        case (.pending, .attemptStarted):
            return .moveTo(.verifying)
        case (.verified, .attemptStarted):
            return .moveTo(.verified)

        // MARK: transient failure
        case (.verifying, .transientFailure):
            return .moveTo(.pending)
        case (.verified, .transientFailure):
            return .moveTo(.verified)

        // MARK: verified
        case (.verifying, .verified(let finishesOrder)):
            return .moveTo(finishesOrder ? .finished : .verified)

        // MARK: definitive reject
        case (.verifying, .definitiveReject(let escalate)):
            return .moveTo(escalate ? .escalated : .rejected)
        case (.verified, .definitiveReject(escalate: true)):
            // A delivery endpoint's refusal (422 or another 4xx) escalates (DESIGN §5); the
            // grant itself stands, so it is never a rejection.
            return .moveTo(.escalated)

        // MARK: limits hit
        case (.waiting, .limitsHit):
            return .moveTo(.expired)
        case (.pending, .limitsHit), (.verifying, .limitsHit), (.verified, .limitsHit):
            return .moveTo(.escalated)

        // MARK: delivered
        case (.verified, .delivered):
            return .moveTo(.finished)

        // MARK: operator
        case (.verifying, .operatorAction(let action)):
            if action == .release { throw illegal }
            return .deferred
        case (.waiting, .operatorAction(let action)):
            switch action {
            case .hold: return .moveTo(.held)
            case .cancel: return .moveTo(.cancelled)
            case .resolve: return .moveTo(.finished)
            case .release, .retry: throw illegal
            }
        case (.pending, .operatorAction(let action)):
            switch action {
            case .hold: return .moveTo(.held)
            case .cancel: return .moveTo(.cancelled)
            case .resolve: return .moveTo(.finished)
            case .retry: return .moveTo(.pending)
            case .release: throw illegal
            }
        case (.verified, .operatorAction(let action)):
            switch action {
            case .hold: return .moveTo(.held)
            case .resolve: return .moveTo(.finished)
            case .cancel, .release, .retry: throw illegal
            }
        case (.rejected, .operatorAction(let action)), (.expired, .operatorAction(let action)),
            (.escalated, .operatorAction(let action)):
            switch action {
            case .retry:
                if state == .escalated, context.resumeState == .verified { return .moveTo(.verified) }
                return .moveTo(context.hasUsableProof ? .pending : .waiting)
            case .hold: return .moveTo(.held)
            case .cancel: return .moveTo(.cancelled)
            case .resolve: return .moveTo(.finished)
            case .release: throw illegal
            }
        case (.held, .operatorAction(let action)):
            switch action {
            case .release:
                guard let resume = context.resumeState, resume != .held, !resume.isTerminal else {
                    return .moveTo(context.hasUsableProof ? .pending : .waiting)
                }
                return .moveTo(resume)
            case .cancel: return .moveTo(.cancelled)
            case .resolve: return .moveTo(.finished)
            case .hold, .retry: throw illegal
            }

        // MARK: the store takes the money back (DESIGN §4, §5a)
        case (.finished, .revocationConfirmed):
            return .moveTo(.revoked)
        case (.revoked, .refundReversed):
            return .moveTo(.finished)
        case (.pending, .revocationConfirmed), (.verified, .revocationConfirmed), (.escalated, .revocationConfirmed),
            (.held, .revocationConfirmed), (.waiting, .revocationConfirmed):
            // Not delivered yet, and never will be: its verification ends in a rejection.
            return .moveTo(.rejected)
        case (.verifying, .revocationConfirmed):
            // Applied when the attempt in flight ends (its completion is guarded by the lease).
            return .deferred
        case (.rejected, .revocationConfirmed), (.expired, .revocationConfirmed), (.cancelled, .revocationConfirmed),
            (.revoked, .revocationConfirmed):
            // Nothing was granted, or it is revoked already: recorded, nothing changes.
            return .stay

        default:
            throw illegal
        }
    }

    /// Whether `event` is allowed on an order in `state`.
    public static func allows(_ event: OrderEvent, from state: OrderState, context: Context = Context()) -> Bool {
        (try? next(from: state, on: event, context: context)) != nil
    }
}

/// An event the table of DESIGN §4 does not allow in the order's current state.
public struct IllegalTransition: Error, Sendable, Hashable, CustomStringConvertible {
    /// The order's current state.
    public var state: OrderState
    /// The refused event.
    public var event: OrderEvent

    public init(state: OrderState, event: OrderEvent) {
        self.state = state
        self.event = event
    }

    public var description: String {
        switch event {
        case .operatorAction(let action):
            "cannot \(action.rawValue): the order is \(state) (\(state.meaning))"
        default:
            "\(event) is not allowed: the order is \(state) (\(state.meaning))"
        }
    }
}
