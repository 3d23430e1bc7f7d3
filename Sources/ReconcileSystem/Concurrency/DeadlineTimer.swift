import CLinux
import Foundation
import Glibc
import ReconcileFoundation
import Synchronization

/// The daemon's one timer, behind ``SystemClock``: a thread of its own that sleeps in `poll(2)`
/// until the nearest deadline anyone asked for, runs what is due, and sleeps again.
///
/// It exists because of a cost `Task.sleep` has on Linux (Swift 6.3): while any sleep is pending,
/// libdispatch's manager thread re-arms its timer once a second, so a daemon waiting an hour for
/// its next due order would wake 3,600 times. This thread wakes only when a deadline comes or a
/// nearer one is added. Deadlines are few (the scheduler's next turn, a pause, a daily prune), so
/// they are kept unsorted and scanned.
public final class DeadlineTimer: Sendable {
    /// The process's timer; its thread starts with the first deadline.
    public static let shared = DeadlineTimer(name: "reconcile.timer")

    private struct Entry {
        var deadline: ContinuousClock.Instant
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [UInt64: Entry] = [:]
        var nextID: UInt64 = 0
        /// When the thread will next look, if it sleeps (nil: not before a wake-up).
        var lookingAt: ContinuousClock.Instant?
        var sleeping = false
        var threadStarted = false
    }

    private let state = Mutex(State())
    /// An eventfd: written to end the thread's `poll` early when a nearer deadline arrives.
    private let wakeDescriptor: Int32
    private let name: String

    /// A timer with a thread of its own named `name` (tests make their own; the thread lives as
    /// long as the process).
    init(name: String) {
        self.name = name
        wakeDescriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK))
        precondition(wakeDescriptor >= 0, "eventfd: \(String(cString: strerror(errno)))")
    }

    /// Runs `action` on the timer's thread at `deadline` (at once if it has passed), unless it is
    /// cancelled first. The action must be quick: resume a continuation, signal something.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void) -> ClockTimer {
        let (token, wake, start) = state.withLock { state -> (ClockTimer, Bool, Bool) in
            state.nextID += 1
            state.entries[state.nextID] = Entry(deadline: deadline, action: action)
            var wake = false
            if state.sleeping, state.lookingAt.map({ deadline < $0 }) ?? true {
                state.lookingAt = deadline
                wake = true
            }
            let start = !state.threadStarted
            state.threadStarted = true
            return (ClockTimer(id: state.nextID), wake, start)
        }
        if start {
            Thread { [self] in
                _ = reconcile_name_this_thread(String(decoding: name.utf8.prefix(15), as: UTF8.self))
                run()
            }.start()
        }
        if wake {
            var one: UInt64 = 1
            _ = write(wakeDescriptor, &one, 8)
        }
        return token
    }

    /// Forgets a scheduled action; nothing happens if it already ran.
    public func cancel(_ timer: ClockTimer) {
        _ = state.withLock { $0.entries.removeValue(forKey: timer.id) }
    }

    /// The deadline the thread sleeps towards, nil while it runs actions or has nothing to wait
    /// for: what a test waits for, instead of sleeping, to know the thread has gone to sleep.
    package var sleepingTowards: ContinuousClock.Instant? {
        state.withLock { $0.sleeping ? $0.lookingAt : nil }
    }

    /// How many actions are scheduled and have not run.
    package var pendingCount: Int {
        state.withLock { $0.entries.count }
    }

    private func run() {
        var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
        while true {
            let now = ContinuousClock.now
            let (due, timeout) = state.withLock { state -> ([Entry], Int32) in
                var due: [Entry] = []
                var nearest: ContinuousClock.Instant?
                for (id, entry) in state.entries {
                    if entry.deadline <= now {
                        due.append(entry)
                        state.entries[id] = nil
                    } else if nearest.map({ entry.deadline < $0 }) ?? true {
                        nearest = entry.deadline
                    }
                }
                state.sleeping = due.isEmpty
                state.lookingAt = nearest
                return (due, nearest.map { Self.milliseconds(until: $0, from: now) } ?? -1)
            }
            if !due.isEmpty {
                for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.action() }
                continue
            }
            if poll(&descriptor, 1, timeout) > 0 {
                var count: UInt64 = 0
                _ = read(wakeDescriptor, &count, 8)
            }
        }
    }

    /// A `poll` time-out that never ends before `deadline` (rounded up to the millisecond).
    static func milliseconds(until deadline: ContinuousClock.Instant, from now: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (deadline - now).components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(1, milliseconds))
    }
}
