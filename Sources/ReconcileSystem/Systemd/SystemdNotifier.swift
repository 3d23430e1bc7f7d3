import CLinux
import CSystemd
import Glibc
import Synchronization

/// Tells the service manager how the daemon is doing, through libsystemd's `sd_notify`
/// (sd_notify(3)): readiness, reloads, shutdown, a status line and the watchdog.
///
/// Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing. A failed send is
/// ignored, as upstream advises: the manager's own time-outs catch a daemon that cannot report.
public final class SystemdNotifier: Sendable {
    /// Whether a service manager listens (`NOTIFY_SOCKET` is set).
    public let isEnabled: Bool
    /// How often to send `WATCHDOG=1`: half of `WATCHDOG_USEC`, when the watchdog is on for
    /// this process.
    public let watchdogInterval: Duration?
    private let lastStatus = Mutex<String?>(nil)
    private let lastPing = Mutex<ContinuousClock.Instant?>(nil)
    /// After `STOPPING=1` the status line says so until the end; updates are dropped.
    private let isStopping = Atomic<Bool>(false)

    public init(environment: [String: String]) {
        isEnabled = !(environment["NOTIFY_SOCKET"] ?? "").isEmpty
        var microseconds: UInt64 = 0
        // Checks WATCHDOG_PID against getpid(), so a child that inherited the variables stays quiet.
        if sd_watchdog_enabled(0, &microseconds) > 0, microseconds > 0 {
            watchdogInterval = .microseconds(Int64(clamping: microseconds / 2))
        } else {
            watchdogInterval = nil
        }
    }

    /// Start-up finished: the store is open, the spool watched, the control socket listening.
    public func ready(status: String) {
        lastStatus.withLock { last in
            last = status
            send(["READY=1", "STATUS=" + Self.singleLine(status)])
        }
    }

    /// A new status line for `systemctl status`; sends only when it differs from the last one,
    /// and never after ``stopping(status:)``. Returns whether it was sent.
    @discardableResult
    public func status(_ status: String) -> Bool {
        // Sent under the lock, so that a line decided on before STOPPING=1 cannot arrive after it.
        lastStatus.withLock { last in
            guard last != status, !isStopping.load(ordering: .relaxed) else { return false }
            last = status
            send(["STATUS=" + Self.singleLine(status)])
            return true
        }
    }

    /// A reload begins (`RELOADING=1` with the monotonic time, as `Type=notify-reload` wants);
    /// ``ready(status:)`` ends it, whether the new configuration was taken or not.
    public func reloading() {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let microseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
        send(["RELOADING=1", "MONOTONIC_USEC=\(microseconds)", "STATUS=reloading the configuration"])
    }

    /// Shutdown begins.
    public func stopping(status: String) {
        lastStatus.withLock { last in
            isStopping.store(true, ordering: .relaxed)
            last = status
            send(["STOPPING=1", "STATUS=" + Self.singleLine(status)])
        }
    }

    /// The keep-alive ping; call it from the loop whose progress it vouches for, at least every
    /// ``watchdogInterval``. A busy loop calls it far more often: it sends at most one ping per
    /// half interval, so the gap between pings stays within the interval (half the timeout).
    public func watchdog() {
        guard let interval = watchdogInterval else { return }
        let now = ContinuousClock.now
        let due = lastPing.withLock { last in
            if let previous = last, now - previous < interval / 2 { return false }
            last = now
            return true
        }
        if due { send(["WATCHDOG=1"]) }
    }

    /// Asks for more time to start (or stop): the manager waits `extra` from now.
    public func extendTimeout(by extra: Duration) {
        let (seconds, attoseconds) = extra.components
        send(["EXTEND_TIMEOUT_USEC=\(seconds * 1_000_000 + attoseconds / 1_000_000_000_000)"])
    }

    /// Start-up failed: the reason for `systemctl status`, and the `errno` when there is one.
    public func failed(status: String, errno: Int32?) {
        var assignments = ["STATUS=" + Self.singleLine(status)]
        if let errno { assignments.append("ERRNO=\(errno)") }
        send(assignments)
    }

    /// One datagram with the assignments, newline-separated.
    public func send(_ assignments: [String]) {
        guard isEnabled else { return }
        _ = sd_notify(0, assignments.joined(separator: "\n"))
    }

    /// `STATUS=` is one line; a newline would start a new assignment.
    static func singleLine(_ text: String) -> String {
        text.contains(where: \.isNewline) ? String(text.map { $0.isNewline ? " " : $0 }) : text
    }
}
