import Foundation
import Synchronization

/// The daemon's time, as one dependency: the wall clock (UTC dates, in which due times are
/// stored), a monotonic clock (`ContinuousClock.Instant`, which does not step) for deadlines,
/// circuits and buckets, and timers on the monotonic clock.
///
/// Everything that waits — the scheduler's loop, wake signals, throttled triggers, pollers, the
/// daily prune — takes a clock and never reads the real one, so a test moves time by hand
/// (`ManualClock` in `TestSupport`) and asserts what happens at a given instant instead of
/// sleeping. The daemon passes ``SystemClock`` (in `ReconcileSystem`) everywhere.
public protocol DaemonClock: Sendable {
    /// The wall clock.
    func now() -> Date
    /// The monotonic clock.
    func instant() -> ContinuousClock.Instant
    /// Runs `action` at `deadline` (at once if it has passed), unless ``cancel(_:)`` comes
    /// first. The action must be quick: resume a continuation, signal something.
    @discardableResult
    func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ClockTimer
    /// Forgets a scheduled action; nothing happens if it already ran.
    func cancel(_ timer: ClockTimer)
}

/// Names an action scheduled on a ``DaemonClock``, to cancel it.
public struct ClockTimer: Hashable, Sendable {
    public let id: UInt64

    public init(id: UInt64) {
        self.id = id
    }
}

extension DaemonClock {
    /// Sleeps until `deadline` on this clock; throws `CancellationError` at once if the task is
    /// cancelled (before or during the sleep).
    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        let sleeper = ClockSleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                sleeper.begin(continuation, clock: self, deadline: deadline)
            }
        } onCancel: {
            sleeper.cancel(clock: self)
        }
    }

    /// Sleeps for `duration` on this clock; throws `CancellationError` if the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await sleep(until: instant() + duration)
    }
}

/// One `sleep`: its continuation and timer, and whether cancellation came first.
private final class ClockSleeper: Sendable {
    private enum Phase {
        case starting
        case waiting(CheckedContinuation<Void, any Error>, ClockTimer?)
        case cancelled
        case finished
    }

    private let phase = Mutex(Phase.starting)

    func begin(_ continuation: CheckedContinuation<Void, any Error>, clock: some DaemonClock, deadline: ContinuousClock.Instant) {
        let cancelled = phase.withLock { phase -> Bool in
            guard case .starting = phase else { return true }
            // Scheduled outside the lock: a clock may run a passed deadline's action at once.
            phase = .waiting(continuation, nil)
            return false
        }
        if cancelled {
            continuation.resume(throwing: CancellationError())
            return
        }
        let timer = clock.schedule(at: deadline) { [self] in fire() }
        let ended = phase.withLock { phase -> Bool in
            guard case .waiting(let continuation, _) = phase else { return true }
            phase = .waiting(continuation, timer)
            return false
        }
        if ended { clock.cancel(timer) }  // fired or cancelled meanwhile: nothing left to run
    }

    private func fire() {
        let continuation = phase.withLock { phase -> CheckedContinuation<Void, any Error>? in
            guard case .waiting(let continuation, _) = phase else { return nil }
            phase = .finished
            return continuation
        }
        continuation?.resume()
    }

    func cancel(clock: some DaemonClock) {
        let (continuation, timer) = phase.withLock { phase -> (CheckedContinuation<Void, any Error>?, ClockTimer?) in
            switch phase {
            case .starting:
                phase = .cancelled
                return (nil, nil)
            case .waiting(let continuation, let timer):
                phase = .cancelled
                return (continuation, timer)
            case .cancelled, .finished:
                return (nil, nil)
            }
        }
        if let timer { clock.cancel(timer) }
        continuation?.resume(throwing: CancellationError())
    }
}
