import Foundation
import ReconcileFoundation
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Deadline timer")
struct DeadlineTimerTests {
    /// The tests' own timer, so that other suites' deadlines do not wake its thread.
    static let timer = DeadlineTimer(name: "test.timer")
    /// The real clock on that timer.
    static let clock = SystemClock(timer: timer)

    @Test("a sleep ends at its deadline, not before")
    func sleepsUntilTheDeadline() async throws {
        let start = ContinuousClock.now
        // real sleep: the real clock's timer is what is under test
        try await Self.clock.sleep(for: .milliseconds(150))
        let slept = ContinuousClock.now - start
        #expect(slept >= .milliseconds(150))
        // Late only by what a loaded test run takes to resume a task (precision: the benchmark).
        #expect(slept < .seconds(30), "woke \(slept) after a 150 ms sleep")
    }

    @Test("a deadline that has passed runs at once")
    func pastDeadline() async throws {
        let ran = Atomic<Bool>(false)
        Self.timer.schedule(at: .now - .seconds(1)) { ran.store(true, ordering: .relaxed) }
        #expect(await eventually(timeout: .seconds(3)) { ran.load(ordering: .relaxed) == true })
    }

    @Test("actions run in the order of their deadlines, whatever the order they were added in")
    func order() async throws {
        let order = Mutex<[Int]>([])
        let base = ContinuousClock.now + .milliseconds(100)
        for index in [3, 1, 4, 0, 2] {
            Self.timer.schedule(at: base + .milliseconds(40 * index)) { order.withLock { $0.append(index) } }
        }
        #expect(await eventually(timeout: .seconds(5)) { order.withLock { $0.count } == 5 })
        #expect(order.withLock { $0 } == [0, 1, 2, 3, 4])
    }

    @Test("a nearer deadline added while the thread sleeps towards a far one is kept")
    func nearerDeadlineWakesTheThread() async throws {
        let timer = DeadlineTimer(name: "nearer.timer")
        let hour = ContinuousClock.now + .seconds(3_600)
        let far = timer.schedule(at: hour) { Issue.record("the far deadline ran") }
        defer { timer.cancel(far) }
        #expect(await eventually(timeout: .seconds(10)) { timer.sleepingTowards == hour }, "the thread never slept towards the hour")
        let ran = Mutex<ContinuousClock.Instant?>(nil)
        let added = ContinuousClock.now
        timer.schedule(at: added + .milliseconds(100)) { ran.withLock { $0 = .now } }
        #expect(await eventually(timeout: .seconds(5)) { ran.withLock { $0 } != nil })
        let late = ran.withLock { $0! } - (added + .milliseconds(100))
        #expect(late >= .zero && late < .seconds(5), "ran \(late) after its deadline")
    }

    @Test("a cancelled action never runs")
    func cancelledNeverRuns() async throws {
        let ran = Atomic<Bool>(false)
        let token = Self.timer.schedule(at: .now + .milliseconds(100)) { ran.store(true, ordering: .relaxed) }
        Self.timer.cancel(token)
        let witness = Atomic<Bool>(false)
        Self.timer.schedule(at: .now + .milliseconds(300)) { witness.store(true, ordering: .relaxed) }
        #expect(await eventually(timeout: .seconds(5)) { witness.load(ordering: .relaxed) == true })
        #expect(ran.load(ordering: .relaxed) == false)
    }

    @Test("cancelling the sleeping task ends an hour's sleep at once with CancellationError")
    func cancellation() async throws {
        let timer = DeadlineTimer(name: "cancel.timer")
        let clock = SystemClock(timer: timer)
        // real sleep: an hour's, which the cancellation must end at once
        let sleeping = Task { try await clock.sleep(for: .seconds(3_600)) }
        #expect(await eventually(timeout: .seconds(10)) { timer.pendingCount == 1 }, "the task never went to sleep")
        let cancelled = ContinuousClock.now
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
        #expect(ContinuousClock.now - cancelled < .seconds(30), "an hour's sleep did not end at the cancellation")
    }

    @Test("a task cancelled before it sleeps does not sleep")
    func cancelledBeforeSleeping() async throws {
        let sleeping = Task {
            while !Task.isCancelled { await Task.yield() }
            // real sleep: an hour's, which must not begin, the task being cancelled
            try await Self.clock.sleep(for: .seconds(3_600))
        }
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
    }

    @Test("waiting for an hour costs its thread no wake-ups (Task.sleep would cost one a second)")
    func idleCostsNothing() async throws {
        let timer = DeadlineTimer(name: "idle.timer")
        let hour = ContinuousClock.now + .seconds(3_600)
        let token = timer.schedule(at: hour) {}
        defer { timer.cancel(token) }
        #expect(await eventually(timeout: .seconds(10)) { timer.sleepingTowards == hour }, "the thread never slept towards the hour")
        let before = try #require(Self.contextSwitches(ofThreadNamed: "idle.timer"))
        // real sleep: the wake-ups of a real thread over real time are what is measured
        try await Task.sleep(for: .seconds(3))
        let after = try #require(Self.contextSwitches(ofThreadNamed: "idle.timer"))
        #expect(after - before <= 1, "the timer thread woke \(after - before) times in 3 s")
    }

    /// Voluntary plus involuntary context switches of this process's thread named `name`.
    static func contextSwitches(ofThreadNamed name: String) -> Int? {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        for task in tasks {
            guard let comm = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8),
                comm.trimmingCharacters(in: .whitespacesAndNewlines) == name,
                let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8)
            else { continue }
            return status.split(separator: "\n").filter { $0.hasSuffix("ctxt_switches") || $0.contains("ctxt_switches:") }
                .compactMap { Int($0.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) }
                .reduce(0, +)
        }
        return nil
    }
}
