import Foundation
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem
import ReconcileFoundation

@Suite("Service group")
struct ServiceGroupTests {
    /// What the parts did, in order.
    final class Journal: Sendable {
        private let entries = Mutex<[String]>([])
        func append(_ entry: String) { entries.withLock { $0.append(entry) } }
        var all: [String] { entries.withLock { $0 } }
    }

    /// A part that records when it started and stopped, and runs until asked to stop (or, when
    /// told, fails on its own).
    final class Part: Service, @unchecked Sendable {
        // @unchecked: the journal is a Mutex; the signal is Sendable.
        let name: String
        let journal: Journal
        let stopSignal = WakeSignal(clock: SystemClock())  // waits without a deadline
        let stopped = Atomic<Bool>(false)
        /// Fails (or returns) once this many parts have started, itself included.
        let failOnceStarted: Int?
        let returnEarly: Bool

        init(_ name: String, journal: Journal, failOnceStarted: Int? = nil, returnEarly: Bool = false) {
            self.name = name
            self.journal = journal
            self.failOnceStarted = failOnceStarted
            self.returnEarly = returnEarly
        }

        struct Broken: Error, CustomStringConvertible { var description: String { "disk on fire" } }

        func run() async throws {
            journal.append("start \(name)")
            if let failOnceStarted {
                _ = await eventually(every: .milliseconds(1)) { [journal] in journal.all.count { $0.hasPrefix("start") } >= failOnceStarted }
                journal.append("end \(name)")
                if returnEarly { return }
                throw Broken()
            }
            while !stopped.load(ordering: .acquiring) { await stopSignal.wait(until: nil) }
            journal.append("end \(name)")
        }

        func stop() async {
            journal.append("stop \(name)")
            stopped.store(true, ordering: .releasing)
            stopSignal.signal()
        }
    }

    @Test("parts start in order and stop in reverse order, each ended before the next is asked")
    func orderly() async throws {
        let journal = Journal()
        let group = ServiceGroup(["a", "b", "c"].map { Part($0, journal: journal) }, logger: .discarding)
        let running = Task { try await group.run() }
        try await waitUntil { journal.all.count == 3 }
        group.shutdown()
        try await running.value
        let events = journal.all
        #expect(Set(events.prefix(3)) == ["start a", "start b", "start c"])
        #expect(Array(events.dropFirst(3)) == ["stop c", "end c", "stop b", "end b", "stop a", "end a"])
    }

    @Test("a part that throws stops the others in reverse order, and the group throws naming it and its error")
    func failure() async throws {
        let journal = Journal()
        let capture = CapturingLogHandler()
        let logger = Logger(handler: capture)
        let group = ServiceGroup(
            [Part("ingest", journal: journal), Part("scheduler", journal: journal, failOnceStarted: 3), Part("metrics", journal: journal)],
            logger: logger)
        await #expect(throws: ServiceGroup.UnexpectedEnd(service: "scheduler", error: "disk on fire")) { try await group.run() }
        let events = journal.all
        #expect(Array(events.suffix(5)) == ["end scheduler", "stop metrics", "end metrics", "stop ingest", "end ingest"])
        let logged = capture.records
        #expect(logged.contains { $0.level == .critical && $0.message.contains("scheduler failed: disk on fire") })
    }

    @Test("a part that returns on its own is a failure too")
    func earlyReturn() async throws {
        let journal = Journal()
        let group = ServiceGroup(
            [Part("watch", journal: journal, failOnceStarted: 2, returnEarly: true), Part("scheduler", journal: journal)],
            logger: .discarding)
        await #expect(throws: ServiceGroup.UnexpectedEnd(service: "watch", error: nil)) { try await group.run() }
        #expect(journal.all.suffix(2) == ["stop scheduler", "end scheduler"])
    }

    @Test("a shutdown asked for before the parts got going still stops each of them")
    func shutdownFirst() async throws {
        let journal = Journal()
        let group = ServiceGroup(["a", "b"].map { Part($0, journal: journal) }, logger: .discarding)
        group.shutdown()
        try await group.run()
        let events = journal.all
        #expect(events.filter { $0.hasPrefix("end") }.count == 2)
        #expect(events.firstIndex(of: "end b")! < events.firstIndex(of: "stop a")!)
    }

    func waitUntil(_ condition: () -> Bool) async throws {
        #expect(await eventually(every: .milliseconds(10)) { condition() })
    }
}

extension ServiceGroup.UnexpectedEnd: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.service == b.service && a.error == b.error }
}
