import Synchronization

/// Wakes a loop that sleeps until a deadline: `signal()` from anywhere ends the current (or the
/// next) `wait` at once. A signal is never lost; several coalesce into one wake-up. Deadlines are
/// kept by `DeadlineTimer`, which costs nothing while it waits.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
        var timer: DeadlineTimer.Token?
        var generation = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// Whether a `wait` is in progress, and which (for tests).
    var hasWaiter: Bool { state.withLock { $0.waiter != nil } }
    var generation: Int { state.withLock { $0.generation } }

    /// Ends the current wait, or the next one if nobody waits.
    public func signal() {
        let (waiter, timer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, DeadlineTimer.Token?) in
            guard let waiter = state.waiter else {
                state.pending = true
                return (nil, nil)
            }
            state.waiter = nil
            defer { state.timer = nil }
            return (waiter, state.timer)
        }
        if let timer { DeadlineTimer.shared.cancel(timer) }
        waiter?.resume()
    }

    /// Sleeps until `deadline` (forever when `nil`) or a signal, whichever comes first.
    public func wait(until deadline: ContinuousClock.Instant?) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.pending {
                    state.pending = false
                    return true
                }
                state.generation += 1
                state.waiter = continuation
                if let deadline {
                    let generation = state.generation
                    state.timer = DeadlineTimer.shared.schedule(at: deadline) { [self] in expire(generation) }
                }
                return false
            }
            if resumeNow { continuation.resume() }
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
