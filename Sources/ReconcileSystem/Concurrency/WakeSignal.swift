import ReconcileFoundation
import Synchronization

/// Wakes a loop that sleeps until a deadline: `signal()` from anywhere ends the current (or the
/// next) `wait` at once. A signal is never lost; several coalesce into one wake-up. Deadlines are
/// kept by the clock's timers (the daemon's cost nothing while they wait).
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        var timer: ClockTimer?
        var generation = 0
    }

    private let state = Mutex(State())
    private let clock: any DaemonClock

    /// A signal whose timed waits end by `clock`.
    public init(clock: any DaemonClock) {
        self.clock = clock
    }

    /// Whether a `wait` is in progress, and which (for tests).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }
    var generation: Int { state.withLock { $0.generation } }

    /// Ends the current wait, or the next one if nobody waits.
    public func signal() {
        let (waiter, timer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, ClockTimer?) in
            guard let waiter = state.waiter else {
                state.pending = true
                return (nil, nil)
            }
            state.waiter = nil
            defer { state.timer = nil }
            return (waiter, state.timer)
        }
        if let timer { clock.cancel(timer) }
        waiter?.resume()
    }

    /// Sleeps until `deadline` (forever when `nil`) or a signal, whichever comes first.
    public func wait(until deadline: ContinuousClock.Instant?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let generation = state.withLock { state -> Int? in
                if state.pending {
                    state.pending = false
                    return nil
                }
                state.generation += 1
                state.waiter = continuation
                return state.generation
            }
            guard let generation else { return continuation.resume() }
            guard let deadline else { return }
            // Scheduled outside the lock: a clock may run a passed deadline's action at once.
            let timer = clock.schedule(at: deadline) { [self] in expire(generation) }
            let ended = state.withLock { state -> Bool in
                guard state.generation == generation, state.waiter != nil else { return true }
                state.timer = timer
                return false
            }
            if ended { clock.cancel(timer) }
        }
    }

    /// The deadline of wait number `generation` came; it ends that wait only.
    func expire(_ generation: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.generation == generation, let waiter = state.waiter else { return nil }
            state.waiter = nil
            state.timer = nil
            return waiter
        }
        waiter?.resume()
    }
}
