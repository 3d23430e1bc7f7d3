import Foundation

/// The two clocks the scheduler reads: the wall clock, in which due times are stored (UTC), and
/// a monotonic one for circuits, buckets and its own deadlines. Injected, so that tests drive
/// time; the daemon uses ``SystemSchedulerClock``.
public protocol SchedulerClock: Sendable {
    /// The wall clock.
    func now() -> Date
    /// Monotonic seconds since the clock's start.
    func uptime() -> Double
    /// The monotonic instant `uptime` seconds after the clock's start (what a wait sleeps until).
    func instant(atUptime uptime: Double) -> ContinuousClock.Instant
}

/// The real clocks: `Date()` and `ContinuousClock` (CLOCK_MONOTONIC, which does not step).
public struct SystemSchedulerClock: SchedulerClock {
    private let origin = ContinuousClock.now

    public init() {}

    public func now() -> Date { Date() }

    public func uptime() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    public func instant(atUptime uptime: Double) -> ContinuousClock.Instant {
        origin + .nanoseconds(Int64((max(0, uptime) * 1e9).rounded()))
    }
}
