import Foundation
import Glibc
import ReconcileCore
import ReconcileEngine
import ReconcileFoundation
import ReconcileSpool
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileDaemon

/// A transport for a scheduler that is never run.
private struct NoTransport: HTTPTransport {
    func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
        HTTPExchangeResult(.failure(HTTPFailure(.connectionRefused, "not in this test")), latency: .zero)
    }
}

@Suite("Metrics publisher", .serialized)
struct MetricsPublisherTests {
    let directory = TemporaryDirectory(prefix: "publisher")
    static let started = Date(timeIntervalSince1970: 1_800_000_000)
    /// The pauses between writes pass when the test moves this clock.
    let clock = ManualClock(wall: MetricsPublisherTests.started)

    /// Ends the pause after a write: the publisher waits for the next change.
    func endPause(_ interval: Duration) async {
        await clock.waitForTimers()
        clock.advance(by: interval)
    }

    /// A store, a scheduler (not running) and an ingestor (not running) in the directory.
    func sources() throws -> MetricsPublisher.Sources {
        let store = try SQLiteOrderStore(path: directory.file("orders.db"), mode: .owner)
        let layout = SpoolLayout(root: directory.file("spool"))
        try layout.prepare()
        let senders = Scheduler.Senders(
            verifier: MerchantVerifier(endpoint: EndpointSettings(url: "https://merchant.example/verify", timeout: .seconds(1)), transport: NoTransport()))
        let settings = Scheduler.Settings(
            resolver: AttemptResolver(policy: RetryPolicy(Configuration.RetrySettings()), deliveryConfigured: false),
            maxInFlight: 4, maxRate: nil, burst: 10, circuitThreshold: 10, circuitCooldown: .seconds(1), circuitMaxCooldown: .seconds(5),
            requestTimeout: .seconds(1))
        return MetricsPublisher.Sources(
            store: store, scheduler: Scheduler(store: store, settings: settings, senders: senders, logger: .discarding, clock: clock),
            ingestor: SpoolIngestor(
                layout: layout, store: store, settings: .init(verifierKind: .http, maxFileSize: 1 << 20), logger: .discarding, clock: clock))
    }

    func ingest(_ store: any OrderStore, _ orderIDs: [String]) throws {
        let candidates = try orderIDs.map { orderID in
            let bytes = Array(OrderFixtures.orderJSON(orderID).utf8)
            return IngestCandidate(submission: try OrderFileParser().parse(bytes), raw: bytes, contentHash: orderID, fileName: "\(orderID).json")
        }
        _ = try store.ingest(candidates, verifierKind: .http, now: Date())
    }

    func read(_ path: String) -> PrometheusText? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? PrometheusText(parsing: String(decoding: data, as: UTF8.self))
    }

    func inode(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    @Test("the snapshot takes each number from its part: store, scheduler, spool ingest")
    func snapshot() {
        var counters = Scheduler.Counters()
        counters.attemptsStarted = 9
        counters.finished = 5
        counters.rejected = 1
        counters.escalated = 2
        counters.expired = 3
        counters.retried = 4
        counters.outcomes = ["verified": 5, "transient": 4]
        var histogram = LatencyHistogram()
        histogram.record(.milliseconds(80))
        let status = SchedulerStatus(
            inFlight: 2,
            endpoints: [
                SchedulerStatus.Endpoint(endpoint: .production, circuit: "open", openings: 3),
                SchedulerStatus.Endpoint(endpoint: .sandbox, circuit: "half-open", openings: 1),
                SchedulerStatus.Endpoint(endpoint: .delivery, circuit: "closed"),
            ],
            counters: counters, requestDurations: [.production: histogram])
        var ingest = SpoolIngestor.Summary()
        ingest.accepted = 7
        ingest.unchanged = 6
        ingest.proofReplaced = 5
        ingest.duplicates = 4
        ingest.rejected = 3
        ingest.deferred = 99
        let summary = StoreSummary(counts: [.pending: 2, .finished: 5], oldestPendingReceivedAt: Self.started + 10)
        let snapshot = MetricsPublisher.snapshot(summary: summary, status: status, ingest: ingest, startedAt: Self.started, takenAt: Self.started + 70)
        #expect(snapshot == MetricsSnapshot(
            version: ReconcileVersion.current, startedAt: Self.started, takenAt: Self.started + 70, ordersByState: [.pending: 2, .finished: 5],
            oldestPendingReceivedAt: Self.started + 10, attemptsInFlight: 2, attemptsStarted: 9, outcomes: ["verified": 5, "transient": 4],
            transitions: [.finished: 5, .rejected: 1, .escalated: 2, .expired: 3, .pending: 4],
            circuits: [
                MetricsSnapshot.Circuit(endpoint: .production, state: .open, openings: 3),
                MetricsSnapshot.Circuit(endpoint: .sandbox, state: .halfOpen, openings: 1),
                MetricsSnapshot.Circuit(endpoint: .delivery, state: .closed, openings: 0),
            ],
            requestDurations: [.production: histogram],
            spoolFiles: [.accepted: 7, .unchanged: 6, .proofReplaced: 5, .duplicate: 4, .rejected: 3]))
    }

    @Test("written at start, after a change and a minute after the last run; unchanged numbers write nothing; cancelling writes the last state")
    func lifecycle() async throws {
        let sources = try sources()
        let path = directory.file("reconciled.prom")
        let publisher = MetricsPublisher(path: path, logger: .discarding, clock: clock, interval: .milliseconds(200))
        let task = Task { await publisher.run(sources) }
        // Each step waits for the run its change caused to be over, so that none is pending
        // when the next begins, however slow the machine.
        func published(_ count: Int) async -> Bool {
            await eventually(timeout: .seconds(20)) { await publisher.publications == count }
        }

        #expect(await published(1))  // at start
        let first = try #require(read(path))
        #expect(first.value("reconciled_orders", ["state": "pending"]) == 0)
        #expect(first.value("reconciled_start_time_seconds") == 1_800_000_000)
        #expect(first.value("reconciled_request_duration_seconds_count", ["endpoint": "merchant"]) == 0)
        #expect(first.value("reconciled_circuit_state", ["endpoint": "merchant", "state": "closed"]) == 1)
        let firstInode = inode(path)
        await endPause(.milliseconds(200))

        publisher.changed()  // nothing moved: the same text is not written again
        #expect(await published(2))
        #expect(inode(path) == firstInode)
        await endPause(.milliseconds(200))

        try ingest(sources.store, ["A1", "A2"])
        publisher.changed()
        #expect(await published(3))
        #expect(read(path)?.value("reconciled_orders", ["state": "pending"]) == 2)
        #expect(read(path)?.family("reconciled_oldest_pending_order_received_timestamp_seconds")?.samples.count == 1)
        await endPause(.milliseconds(200))

        try ingest(sources.store, ["A3"])  // nobody says so: only the heartbeat, a minute on, notices
        await clock.waitForTimers()
        #expect(clock.pendingDeadlines.count == 1, "one timer: the heartbeat")
        clock.advance(by: .seconds(59))
        #expect(await publisher.publications == 3)
        #expect(read(path)?.value("reconciled_orders", ["state": "pending"]) == 2)
        clock.advance(by: .seconds(1))
        #expect(await published(4))
        #expect(read(path)?.value("reconciled_orders", ["state": "pending"]) == 3)
        let beforeBeat = inode(path)
        await endPause(.milliseconds(200))

        // A quiet minute: the same text is written again, so that its time shows a live daemon.
        await clock.waitForTimers()
        clock.advance(by: .seconds(60))
        #expect(await published(5))
        #expect(inode(path) != beforeBeat)

        task.cancel()
        await task.value
        #expect(await publisher.publications == 6)
        #expect(read(path)?.value("reconciled_orders", ["state": "pending"]) == 3)
        #expect(directory.list(".").filter { $0.hasSuffix(".tmp") }.isEmpty)
        sources.store.close()
    }

    @Test("a file that cannot be written is one warning naming it, not one per change; a notice when it works again")
    func failure() async throws {
        let sources = try sources()
        let path = directory.file("textfile/reconciled.prom")
        let capture = CapturingLogHandler()
        let publisher = MetricsPublisher(path: path, logger: Logger(handler: capture), clock: clock, interval: .milliseconds(50))
        let task = Task { await publisher.run(sources) }
        for count in 1...4 {
            #expect(await eventually(timeout: .seconds(20)) { await publisher.publications == count })
            await endPause(.milliseconds(50))
            publisher.changed()
        }
        #expect(await eventually(timeout: .seconds(20)) { await publisher.publications == 5 })
        let warnings = capture.records.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.hasPrefix("cannot write the metrics file \(path): open ") == true, "\(warnings)")
        #expect(warnings.first?.message.contains("verification goes on") == true)
        #expect(warnings.first?.fields.contains { $0.0 == .path && $0.1 == path } == true)
        await endPause(.milliseconds(50))

        try FileManager.default.createDirectory(atPath: directory.file("textfile"), withIntermediateDirectories: false)
        try ingest(sources.store, ["A1"])
        publisher.changed()
        #expect(await eventually(timeout: .seconds(10)) { read(path) != nil })
        #expect(await eventually(timeout: .seconds(5)) { capture.records.contains { $0.level == .notice && $0.message.contains("written again") } })
        task.cancel()
        await task.value
        sources.store.close()
    }

    @Test("a file written, then a failed write, then a reload that moves it: the old file is removed, not left with stale numbers")
    func retargetAfterFailure() async throws {
        // The directory is reached through a symbolic link, pointed away (writes fail) and back.
        let real = directory.file("real")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
        let link = directory.file("link")
        func point(_ target: String) {
            unlink(link)
            #expect(symlink(target, link) == 0)
        }
        point(real)
        let capture = CapturingLogHandler()
        let publisher = MetricsPublisher(path: link + "/reconciled.prom", logger: Logger(handler: capture), clock: clock)
        await publisher.write("a 1\n")
        point(directory.file("absent"))
        await publisher.write("a 2\n")
        #expect(capture.records.contains { $0.level == .warning && $0.message.hasPrefix("cannot write the metrics file") })
        point(real)
        await publisher.retarget(directory.file("moved.prom"))
        #expect(!FileSystem.exists(real + "/reconciled.prom"), "the old file was left behind")
        #expect(capture.records.contains { $0.message.contains("removed the metrics file") })
    }

    @Test("a reload that moves the file removes the old one; one that turns it off stops writing")
    func retarget() async throws {
        let sources = try sources()
        let first = directory.file("one.prom")
        let second = directory.file("two.prom")
        let publisher = MetricsPublisher(path: first, logger: .discarding, clock: clock, interval: .milliseconds(50))
        let task = Task { await publisher.run(sources) }
        #expect(await eventually(timeout: .seconds(10)) { read(first) != nil })
        await endPause(.milliseconds(50))

        await publisher.retarget(second)
        #expect(await eventually(timeout: .seconds(10)) { read(second) != nil })
        await endPause(.milliseconds(50))
        #expect(!FileSystem.exists(first))

        await publisher.retarget(nil)
        #expect(!FileSystem.exists(second))
        try ingest(sources.store, ["A1"])
        publisher.changed()
        task.cancel()
        await task.value
        #expect(directory.list(".").filter { $0.hasSuffix(".prom") }.isEmpty)
        sources.store.close()
    }
}
