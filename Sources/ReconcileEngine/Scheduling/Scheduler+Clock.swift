import Foundation
import ReconcileFoundation

/// The scheduler's monotonic time as the pure core counts it: seconds since the scheduler was
/// made, on its injected clock.
extension Scheduler {
    /// Monotonic seconds since ``origin``.
    nonisolated func uptime() -> Double {
        (clock.instant() - origin).inSeconds
    }

    /// The monotonic instant `uptime` seconds after ``origin`` (what a wait sleeps until).
    nonisolated func instant(atUptime uptime: Double) -> ContinuousClock.Instant {
        origin + .nanoseconds(Int64((max(0, uptime) * 1e9).rounded()))
    }
}
