import Dispatch

/// Keeps asking the service manager for more start-up time while something long runs (a schema
/// migration copying a large store aside): `EXTEND_TIMEOUT_USEC=` at once and then every
/// `every`, each granting `extra` from then, until ``finish()``.
///
/// A timer on its own queue, because the work it covers blocks the thread that started it.
public final class StartupTimeoutExtender: @unchecked Sendable {
    // @unchecked: a dispatch source may be cancelled from any thread.
    private let timer: any DispatchSourceTimer

    public init(notifier: SystemdNotifier, extra: Duration = .seconds(90), every interval: Duration = .seconds(30)) {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "reconcile.extend-timeout"))
        let (seconds, attoseconds) = interval.components
        let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        // The first at once (the work may be over before a timer fires), then every `interval`.
        notifier.extendTimeout(by: extra)
        timer.schedule(deadline: .now() + .nanoseconds(nanoseconds), repeating: .nanoseconds(nanoseconds))
        timer.setEventHandler { notifier.extendTimeout(by: extra) }
        timer.resume()
        self.timer = timer
    }

    /// The long work is done; no more extensions.
    public func finish() {
        timer.cancel()
    }
}
