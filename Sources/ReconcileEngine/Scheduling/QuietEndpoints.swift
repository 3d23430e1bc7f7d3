import ReconcileCore
import Synchronization

/// Which endpoints a healthy answer may skip the scheduler for: those whose circuit is closed
/// with no failure counted (``EndpointAdmission/isQuiet(_:)``) and no failure on its way to the
/// scheduler. A failure marks its endpoint before it waits for the scheduler, so a healthy answer
/// that comes after it is never dropped: it reaches the circuit after the failure, in the order
/// they came, and resets the count as it would have before.
final class QuietEndpoints: Sendable {
    private struct Entry {
        var quiet = false
        /// Failures reported and not yet observed by the scheduler.
        var queued = 0
        /// The last healthy answer that skipped the scheduler.
        var lastSkipped: ContinuousClock.Instant?
    }

    private let entries = Mutex<[VerificationEndpoint: Entry]>([:])

    /// Whether a healthy answer from `endpoint` would change nothing now.
    func skipsHealthy(_ endpoint: VerificationEndpoint) -> Bool {
        entries.withLock { $0[endpoint].map { $0.quiet && $0.queued == 0 } ?? false }
    }

    /// A healthy answer of `endpoint` at `time` skipped the scheduler.
    func skipped(_ endpoint: VerificationEndpoint, at time: ContinuousClock.Instant) {
        entries.withLock { $0[endpoint, default: Entry()].lastSkipped = max($0[endpoint]?.lastSkipped ?? time, time) }
    }

    /// When a healthy answer of `endpoint` last skipped the scheduler.
    func lastSkipped(_ endpoint: VerificationEndpoint) -> ContinuousClock.Instant? {
        entries.withLock { $0[endpoint]?.lastSkipped }
    }

    /// A failure (or a 429) of `endpoint` is on its way to the scheduler.
    func failureQueued(_ endpoint: VerificationEndpoint) {
        entries.withLock {
            $0[endpoint, default: Entry()].queued += 1
            $0[endpoint]!.quiet = false
        }
    }

    /// The scheduler took a failure counted by ``failureQueued(_:)``.
    func failureArrived(_ endpoint: VerificationEndpoint) {
        entries.withLock { $0[endpoint, default: Entry()].queued = max(0, ($0[endpoint]?.queued ?? 1) - 1) }
    }

    /// The scheduler observed `endpoint`: whether its circuit is now quiet.
    func update(_ endpoint: VerificationEndpoint, quiet: Bool) {
        entries.withLock { $0[endpoint, default: Entry()].quiet = quiet }
    }
}
