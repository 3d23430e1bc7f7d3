import CLinux
import Glibc
import ReconcileFoundation
import Synchronization

/// One control connection's request deadline, kept on a ``DaemonClock``: when the clock reaches
/// it, the clock's timer makes ``descriptor`` (an eventfd) readable, which wakes the connection's
/// `poll`. Arming it again moves the deadline (after each answer).
final class RequestAlarm: Sendable {
    private struct State {
        var descriptor: Int32
        var timer: ClockTimer?
        var deadline: ContinuousClock.Instant?
    }

    /// Readable once the deadline has passed; the connection's own thread polls it.
    let descriptor: Int32
    private let clock: any DaemonClock
    private let state: Mutex<State>

    init(clock: any DaemonClock) {
        self.clock = clock
        descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(descriptor >= 0, "eventfd: \(String(cString: strerror(errno)))")
        state = Mutex(State(descriptor: descriptor))
    }

    /// Sets the deadline to `deadline`, forgetting the previous one (and a ring it left).
    func arm(at deadline: ContinuousClock.Instant) {
        let previous = state.withLock { state -> ClockTimer? in
            defer { state.timer = nil }
            state.deadline = deadline
            return state.timer
        }
        if let previous { clock.cancel(previous) }
        var value: eventfd_t = 0
        _ = eventfd_read(descriptor, &value)  // a ring of the deadline before, if it came
        // Scheduled outside the lock: a clock runs a passed deadline's action at once.
        let timer = clock.schedule(at: deadline) { [self] in ring(for: deadline) }
        state.withLock { state in
            if state.deadline == deadline { state.timer = timer }
        }
    }

    /// Whether the clock has reached the deadline.
    var hasRung: Bool {
        guard let deadline = state.withLock({ $0.deadline }) else { return false }
        return clock.instant() >= deadline
    }

    private func ring(for deadline: ContinuousClock.Instant) {
        state.withLock { state in
            // Late for a deadline since moved, or after close: nothing to wake.
            guard state.deadline == deadline, state.descriptor >= 0 else { return }
            _ = eventfd_write(state.descriptor, 1)
        }
    }

    /// Cancels the timer and closes the eventfd; a timer that fires later writes nothing.
    func close() {
        let timer = state.withLock { state -> ClockTimer? in
            if state.descriptor >= 0 { Glibc.close(state.descriptor) }
            state.descriptor = -1
            state.deadline = nil
            return state.timer
        }
        if let timer { clock.cancel(timer) }
    }
}
