import CLinux
import Dispatch
import Glibc

/// Notices when the wall clock is set (stepped forwards or backwards by an administrator or
/// NTP), through a `CLOCK_REALTIME` timerfd armed with `TFD_TIMER_CANCEL_ON_SET`. Costs nothing
/// while the clock runs normally.
public final class WallClockWatch {
    private let descriptor: Int32
    private let source: any DispatchSourceRead

    /// - Parameter changed: called on a private queue after each step.
    public init(changed: @escaping @Sendable () -> Void) throws(SystemError) {
        let descriptor = timerfd_create(CLOCK_REALTIME, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        guard descriptor >= 0 else { throw SystemError.current("timerfd_create") }
        guard reconcile_timerfd_watch_clock(descriptor) == 0 else {
            let error = SystemError.current("timerfd_settime")
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: DispatchQueue(label: "reconcile.clock"))
        source.setEventHandler { @Sendable in
            var expirations: UInt64 = 0
            let result = read(descriptor, &expirations, 8)
            if result < 0 && errno == ECANCELED {
                _ = reconcile_timerfd_watch_clock(descriptor)
                changed()
            }
        }
        source.setCancelHandler { @Sendable in close(descriptor) }
        self.source = source
        source.resume()
    }

    deinit {
        source.cancel()
    }
}
