import ReconcileFoundation
import Synchronization

/// Runs an action after something changed, at most once per `interval`; with no change it
/// sleeps (or, given `atLeastEvery`, runs again when that much time passed quietly). Changes that arrive while the action runs or during the pause
/// after it coalesce into one more run. Used for `STATUS=` (once a second) and the metrics file.
public final class ThrottledTrigger: Sendable {
    /// Wakes the loop for a change (internal: tests see whether the loop waits for one).
    let signal: WakeSignal
    private let interval: Duration
    private let quietLimit: Mutex<Duration?>
    private let clock: any DaemonClock

    /// A trigger that pauses `interval` by `clock` after each run and, given `atLeastEvery`,
    /// runs again without a change when that long passed quietly after the pause.
    public init(interval: Duration, atLeastEvery: Duration? = nil, clock: any DaemonClock) {
        self.interval = interval
        quietLimit = Mutex(atLeastEvery)
        self.clock = clock
        signal = WakeSignal(clock: clock)
    }

    /// Changes `atLeastEvery` (`nil`: only changes run the action); the next wait uses it.
    public func runAtLeastEvery(_ limit: Duration?) {
        quietLimit.withLock { $0 = limit }
    }

    /// Something changed: the action runs soon (at once, or when the pause ends).
    public func changed() {
        signal.signal()
    }

    /// Runs `action` once per burst of changes until the task is cancelled; cancelling runs it a
    /// last time (without the pause), so that the final state is never left unreported. That
    /// last run starts after the cancellation, even when it came while the action was running
    /// (which may have looked before the final change).
    public func run(_ action: @Sendable () async -> Void) async {
        while !Task.isCancelled {
            await withTaskCancellationHandler {
                await signal.wait(until: quietLimit.withLock { $0 }.map { clock.instant() + $0 })
            } onCancel: { [signal] in
                signal.signal()
            }
            if Task.isCancelled { break }
            await action()
            try? await clock.sleep(for: interval)
        }
        await action()
    }
}
