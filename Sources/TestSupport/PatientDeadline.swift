/// The time-out of a polling wait that does not count the time the waiting task spent waiting
/// for a thread.
///
/// A whole test run starts every suite at once on Swift's cooperative pool: two threads on a
/// two-core machine. When the pool is that busy, a poll's 25 ms sleep ends seconds late, and so
/// does every step of the work being waited for, so a wall-clock bound runs out before a correct
/// program gets there (CI saw four 30 s waits of a millisecond's work run out). Each sleep's
/// lateness past its own length moves the deadline on by as much, up to three times the bound
/// in all: a wait that fails, fails in bounded time.
public struct PatientDeadline: Sendable {
    private let cap: ContinuousClock.Instant
    private var deadline: ContinuousClock.Instant

    /// A bound of `timeout` from now, stretched by `TestTime.scale`.
    public init(_ timeout: Duration) {
        let scaled = TestTime.scaled(timeout)
        let now = ContinuousClock.now
        deadline = now + scaled
        cap = now + scaled * 3
    }

    /// Whether the bound has run out.
    public var hasPassed: Bool { ContinuousClock.now > deadline }

    /// Sleeps `interval`; whatever the sleep took beyond it moves the deadline on.
    public mutating func sleep(_ interval: Duration) async {
        let before = ContinuousClock.now
        try? await Task.sleep(for: interval)
        let late = ContinuousClock.now - before - interval
        if late > .zero { deadline = min(deadline + late, cap) }
    }
}
