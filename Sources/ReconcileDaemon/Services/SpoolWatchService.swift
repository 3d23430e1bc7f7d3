import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSpool
import ReconcileSystem
import Synchronization

/// Watching `incoming/` (DESIGN §3): inotify while it works, a rescan every `RescanInterval=`
/// (or every 10 s when inotify is unavailable), and a new watch when the directory is removed and
/// re-created. What it sees goes to the spool ingest as events.
final class SpoolWatchService: Service, @unchecked Sendable {
    // @unchecked: the mutable parts are behind `state`; the rest is immutable.
    let name = "spool watch"
    private let layout: SpoolLayout
    private let logger: Logger
    private let spoolEvents: AsyncStream<SpoolEvent>.Continuation
    private let rewatchRequests: AsyncStream<Void>.Continuation
    private let rewatchStream: AsyncStream<Void>
    private let state: Mutex<State>
    private let clock: any DaemonClock

    private struct State {
        var watcher: SpoolWatcher?
        var rescanTimer: Task<Void, Never>?
        var rescanInterval: Duration?
    }

    /// How often to rescan when inotify is unavailable and `RescanInterval=` is not set.
    static let fallbackRescanInterval: Duration = .seconds(10)

    init(layout: SpoolLayout, rescanInterval: Duration?, logger: Logger, spoolEvents: AsyncStream<SpoolEvent>.Continuation, clock: any DaemonClock) {
        self.clock = clock
        self.layout = layout
        self.logger = logger
        self.spoolEvents = spoolEvents
        self.state = Mutex(State(rescanInterval: rescanInterval))
        (rewatchStream, rewatchRequests) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Sets the watch up and asks for the start-up rescan (before `READY=1`: the spool is watched).
    func start() {
        watch()
        spoolEvents.yield(.rescan(reason: "start-up"))
    }

    /// Whether inotify watches `incoming/` (else only rescans do).
    var isWatching: Bool { state.withLock { $0.watcher != nil } }

    /// Until stopped: a new watch each time the directory went away and came back.
    func run() async throws {
        for await _ in rewatchStream {
            try? await clock.sleep(for: .milliseconds(50))
            watch()
            spoolEvents.yield(.rescan(reason: "spool watch re-established"))
        }
    }

    func stop() async {
        rewatchRequests.finish()
        let (watcher, timer) = state.withLock { state in
            defer {
                state.watcher = nil
                state.rescanTimer = nil
            }
            return (state.watcher, state.rescanTimer)
        }
        watcher?.cancel()
        timer?.cancel()
    }

    /// A reload's `RescanInterval=`.
    func apply(rescanInterval: Duration?) {
        state.withLock { $0.rescanInterval = rescanInterval }
        startRescanTimer(fallback: !isWatching)
    }

    /// Watches `incoming/`; without inotify, falls back to rescanning.
    private func watch() {
        state.withLock { state in
            state.watcher?.cancel()
            state.watcher = nil
        }
        do {
            try layout.prepare()
            let watcher = try SpoolWatcher(directory: layout.incoming) { [spoolEvents, rewatchRequests] event in
                switch event {
                case .arrived(let names): spoolEvents.yield(.arrived(names))
                case .overflow: spoolEvents.yield(.overflow)
                case .directoryGone:
                    spoolEvents.yield(.directoryGone)
                    rewatchRequests.yield()
                }
            }
            state.withLock { $0.watcher = watcher }
            startRescanTimer(fallback: false)
        } catch {
            let interval = state.withLock { $0.rescanInterval } ?? Self.fallbackRescanInterval
            logger.warning(
                "cannot watch \(layout.incoming) with inotify (\(error)); rescanning every \(TimeSpan.format(interval)) instead",
                [.path: layout.incoming, .errno: String(error.errno)])
            startRescanTimer(fallback: true)
        }
    }

    private func startRescanTimer(fallback: Bool) {
        state.withLock { state in
            state.rescanTimer?.cancel()
            state.rescanTimer = nil
            guard let interval = state.rescanInterval ?? (fallback ? Self.fallbackRescanInterval : nil) else { return }
            state.rescanTimer = Task { [spoolEvents, clock] in
                while !Task.isCancelled {
                    try? await clock.sleep(for: interval)
                    if Task.isCancelled { break }
                    spoolEvents.yield(.rescan(reason: "RescanInterval"))
                }
            }
        }
    }
}
