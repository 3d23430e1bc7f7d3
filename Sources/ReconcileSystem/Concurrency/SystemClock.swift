import Foundation
import ReconcileFoundation

/// The real clocks: `Date()` for the wall clock, `ContinuousClock` (CLOCK_MONOTONIC, which does
/// not step) for the monotonic one, and ``DeadlineTimer/shared`` for timers. What the daemon
/// passes wherever a ``DaemonClock`` is asked for.
public struct SystemClock: DaemonClock {
    private let timer: DeadlineTimer

    public init() {
        timer = .shared
    }

    /// A clock on a timer of its own (the timer's tests).
    init(timer: DeadlineTimer) {
        self.timer = timer
    }

    public func now() -> Date { Date() }

    public func instant() -> ContinuousClock.Instant { .now }

    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ClockTimer {
        timer.schedule(at: deadline, action)
    }

    public func cancel(_ timer: ClockTimer) {
        self.timer.cancel(timer)
    }
}
