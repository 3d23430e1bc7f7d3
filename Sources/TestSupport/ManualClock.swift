import Foundation
import ReconcileFoundation
import Synchronization

/// A ``DaemonClock`` the test moves by hand: wall and monotonic time stand still until
/// ``advance(by:)``, which runs every timer that falls due on the way, each at its own instant
/// and in deadline order. A test asserts what happens at a given clock time instead of sleeping;
/// ``waitForTimers(_:)`` tells it, without sleeping either, that a loop has gone to sleep.
public final class ManualClock: DaemonClock {
    private struct Timer {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private struct State {
        var wall: Date
        var instant: ContinuousClock.Instant
        var timers: [UInt64: Timer] = [:]
        var nextID: UInt64 = 0
        /// Tests waiting for this many timers to be pending.
        var timerWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    /// A clock at `wall` (a fixed date in 2030 unless given), monotonic time at the real now.
    public init(wall: Date = Date(timeIntervalSince1970: 1_900_000_000)) {
        state = Mutex(State(wall: wall, instant: .now))
    }

    public func now() -> Date { state.withLock { $0.wall } }

    public func instant() -> ContinuousClock.Instant { state.withLock { $0.instant } }

    /// Runs `action` when the clock is advanced to `deadline` (at once, on the caller's thread,
    /// when it has passed).
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ClockTimer {
        let (timer, due, woken) = state.withLock { state -> (ClockTimer, Bool, [CheckedContinuation<Void, Never>]) in
            state.nextID += 1
            let timer = ClockTimer(id: state.nextID)
            if deadline <= state.instant { return (timer, true, []) }
            state.timers[state.nextID] = Timer(deadline: deadline, action: action)
            return (timer, false, Self.takeSatisfiedWaiters(&state))
        }
        if due { action() }
        for waiter in woken { waiter.resume() }
        return timer
    }

    public func cancel(_ timer: ClockTimer) {
        _ = state.withLock { $0.timers.removeValue(forKey: timer.id) }
    }

    /// Moves wall and monotonic time forward by `duration`, running the timers due on the way.
    public func advance(by duration: Duration) {
        let target = instant() + duration
        while true {
            let next = state.withLock { state -> Timer? in
                guard let (id, timer) = state.timers.filter({ $0.value.deadline <= target }).min(by: { $0.value.deadline < $1.value.deadline })
                else { return nil }
                state.timers[id] = nil
                Self.move(&state, to: timer.deadline)
                return timer
            }
            guard let next else { break }
            next.action()
        }
        state.withLock { state in Self.move(&state, to: target) }
    }

    /// Steps the wall clock alone, as NTP or a hand-set date does; monotonic time stays.
    public func stepWall(by seconds: TimeInterval) {
        state.withLock { $0.wall.addTimeInterval(seconds) }
    }

    /// The deadlines timers wait for, earliest first.
    public var pendingDeadlines: [ContinuousClock.Instant] {
        state.withLock { $0.timers.values.map(\.deadline).sorted() }
    }

    /// Returns once at least `count` timers are pending: whatever sleeps on this clock has gone
    /// to sleep. Waits for that event, never for real time.
    public func waitForTimers(_ count: Int = 1) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.timers.count >= count { return true }
                state.timerWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func move(_ state: inout State, to instant: ContinuousClock.Instant) {
        guard instant > state.instant else { return }
        state.wall.addTimeInterval((instant - state.instant).inSeconds)
        state.instant = instant
    }

    private static func takeSatisfiedWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.timers.count
        let (ready, waiting) = (state.timerWaiters.filter { $0.count <= count }, state.timerWaiters.filter { $0.count > count })
        state.timerWaiters = waiting
        return ready.map(\.continuation)
    }
}
