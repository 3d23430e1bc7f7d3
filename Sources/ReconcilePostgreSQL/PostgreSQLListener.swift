import ReconcileStore
import Foundation
import Glibc
import Synchronization

/// Wakes this node when another one (or `reconcilectl` acting on the store directly) sends
/// `NOTIFY reconcile` (DESIGN §7): a dedicated connection that `LISTEN`s, and a thread of its own
/// that sleeps in `poll(2)` on the connection's socket and a stop pipe, with no time-out while
/// connected — nothing is polled while nothing happens.
///
/// A lost connection is made again with backoff (1 s, doubled, at most 30 s); after each
/// reconnection `onNotify` is called once, since notifications sent meanwhile were lost.
public final class PostgreSQLListener: Sendable {
    private let options: PostgreSQLConnectionOptions
    private let channel: String
    private let onNotify: @Sendable () -> Void
    private let onTrouble: @Sendable (String) -> Void
    /// The stop pipe: reading end, writing end.
    private let stopPipe: (Int32, Int32)
    private let done = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// - Parameters:
    ///   - onNotify: called on the listener's thread for each batch of notifications.
    ///   - onTrouble: called when the connection is lost or cannot be made (once per run of
    ///     failures), with why.
    public init(
        options: PostgreSQLConnectionOptions, channel: String = PostgreSQLOrderStore.channel, onNotify: @escaping @Sendable () -> Void,
        onTrouble: @escaping @Sendable (String) -> Void = { _ in }
    ) {
        var options = options
        options.applicationName += " (listener)"
        self.options = options
        self.channel = channel
        self.onNotify = onNotify
        self.onTrouble = onTrouble
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "cannot create the listener's stop pipe")
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        stopPipe = (fds[0], fds[1])
    }

    deinit {
        close(stopPipe.0)
        close(stopPipe.1)
    }

    /// Starts listening on a thread of its own.
    public func start() {
        started.store(true, ordering: .releasing)
        let thread = Thread { [self] in run() }
        thread.name = "reconcile.listen"
        thread.start()
    }

    /// Stops the thread and closes its connection; returns once it has ended (at most a few
    /// seconds, while a connection attempt is under way).
    public func stop() {
        var byte: UInt8 = 1
        _ = write(stopPipe.1, &byte, 1)
        guard started.load(ordering: .acquiring) else { return }
        for _ in 0..<200 where !done.load(ordering: .acquiring) { usleep(50_000) }
    }

    private var stopRequested: Bool {
        var descriptor = pollfd(fd: stopPipe.0, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    /// Waits up to `seconds` or until stopped; returns true when stopped.
    private func sleep(seconds: Double) -> Bool {
        var descriptor = pollfd(fd: stopPipe.0, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, Int32(seconds * 1000)) > 0
    }

    private func run() {
        defer { done.store(true, ordering: .releasing) }
        var delay = 1.0
        var troubled = false
        while !stopRequested {
            let connection: PostgreSQLConnection
            do {
                connection = try PostgreSQLConnection(options)
                try connection.execute("LISTEN \(channel)")
            } catch {
                if !troubled { onTrouble("cannot listen for wake-ups from other nodes: \(error)") }
                troubled = true
                if sleep(seconds: delay) { return }
                delay = min(30, delay * 2)
                continue
            }
            if troubled { onNotify() }
            troubled = false
            delay = 1
            let lost = listen(on: connection)
            connection.close()
            guard let lost else { return }
            onTrouble("lost the connection that listens for wake-ups: \(lost)")
            troubled = true
            if sleep(seconds: delay) { return }
        }
    }

    /// Waits for notifications until stopped (`nil`) or the connection is lost (why).
    private func listen(on connection: PostgreSQLConnection) -> String? {
        while true {
            var descriptors = [
                pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stopPipe.0, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&descriptors, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            if descriptors[1].revents != 0 { return nil }
            do {
                if !(try connection.notifications()).isEmpty { onNotify() }
            } catch {
                return String(describing: error)
            }
        }
    }
}
