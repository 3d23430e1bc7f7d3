import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import Synchronization
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileSpool

/// Wraps a store to count batches, inject failures, or act in the middle of a commit.
final class SpyStore: OrderIngesting, SerializedStore {
    let inner: any OrderStore
    let batches = Mutex<[Int]>([])
    let failure = Mutex<(any Error)?>(nil)
    let duringIngest = Mutex<(@Sendable () -> Void)?>(nil)

    init(_ inner: any OrderStore) { self.inner = inner }

    func ingest(_ candidates: [IngestCandidate], verifiers: ConfiguredVerifiers, now: Date) throws -> [IngestOutcome] {
        batches.withLock { $0.append(candidates.count) }
        if let error = failure.withLock({ $0 }) { throw error }
        duringIngest.withLock { $0 }?()
        return try inner.ingest(candidates, verifiers: verifiers, now: now)
    }

    func ingestNotifications(
        _ notifications: [StoreNotification], consumption: ConsumptionPolicy, discovery: DiscoverySettings, now: Date
    ) throws -> [NotificationIngestOutcome] {
        batches.withLock { $0.append(notifications.count) }
        if let error = failure.withLock({ $0 }) { throw error }
        return try inner.ingestNotifications(notifications, consumption: consumption, discovery: discovery, now: now)
    }

    func order(id orderID: String) throws -> StoredOrder? { try inner.order(id: orderID) }

    var executor: UnownedSerialExecutor { inner.executor }
    func writing<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await inner.writing(body) }
    func reading<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T { try await inner.reading(body) }
}

struct DiskFull: Error, ClassifiedStoreError {
    var storeFailure: StoreFailure { .diskFull }
}

@Suite("Spool ingest")
struct SpoolIngestorTests {
    let fixture = SpoolFixture()
    /// The retries' delays pass when the test moves this clock.
    let clock = ManualClock()

    func ingestor(_ store: any OrderIngesting & SerializedStore, logger: Logger = .discarding, batchSize: Int = 512) -> SpoolIngestor {
        SpoolIngestor(
            layout: fixture.layout, store: store,
            settings: .init(verifierKind: .apple, maxFileSize: 1024 * 1024, batchSize: batchSize), logger: logger, clock: clock)
    }

    @Test("every kind of bad file goes to rejected/ with the exact reason; good files are committed, then deleted")
    func badFiles() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        fixture.drop("good1.json", OrderFixtures.orderJSON("G1"))
        fixture.drop("good2.json", OrderFixtures.orderJSON("G2", receipt: nil))
        fixture.drop("not-utf8.json", bytes: [0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D])
        fixture.drop("not-json.json", "order A1, product gems")
        fixture.drop("array.json", "[{\"order_id\":\"A\"}]")
        fixture.drop("no-order-id.json", "{\"product_id\":\"p\"}")
        fixture.drop("bad-order-id.json", "{\"order_id\":\"A 1\",\"product_id\":\"p\"}")
        fixture.drop("no-product.json", "{\"order_id\":\"A2\"}")
        let huge = fixture.drop("huge.json", "")
        #expect(truncate(huge, 100 * 1024 * 1024) == 0)
        let secret = fixture.directory.write("secret.txt", "TOP-SECRET-VALUE")
        #expect(symlink(secret, fixture.layout.incoming + "/symlink.json") == 0)
        #expect(mkfifo(fixture.layout.incoming + "/fifo.json", 0o600) == 0)
        #expect(mkdir(fixture.layout.incoming + "/dir.json", 0o700) == 0)
        fixture.drop("empty.json", "")
        fixture.drop("partial.json", "{\"order_id\":\"A9\",\"product_id\":\"p\",\"rec")
        fixture.drop("nul.json", bytes: Array("{\"order_id\":\"A\0\"}".utf8))
        fixture.drop("zz-conflict.json", OrderFixtures.orderJSON("G1", product: "other"))
        fixture.drop(".in-progress.json", "{")
        fixture.drop("writing.json.tmp", "{")

        let summary = await ingestor(store, logger: Logger(handler: capture)).rescan()

        #expect(summary.accepted == 2)
        #expect(summary.rejected == 14)
        #expect(fixture.incoming == [".in-progress.json", "writing.json.tmp"])
        let expected: [String: String] = [
            "not-utf8.json": "not_utf8", "not-json.json": "not_json", "array.json": "not_object",
            "no-order-id.json": "missing_field", "bad-order-id.json": "invalid_field", "no-product.json": "missing_field",
            "huge.json": "too_large", "symlink.json": "symlink", "fifo.json": "not_regular_file",
            "dir.json": "not_regular_file", "empty.json": "empty_file", "partial.json": "not_json", "nul.json": "nul_byte",
            "zz-conflict.json": "conflicting_product",
        ]
        for (name, code) in expected {
            let reason = fixture.reason(name)
            #expect(reason?.contains("reason: \(code)\n") == true, "\(name): \(reason ?? "no reason file")")
            #expect(fixture.rejected.contains(name), "\(name) not in rejected/")
        }
        #expect(fixture.reason("partial.json")?.contains("detail: not valid JSON: unterminated string at line 1, column 35") == true)
        #expect(try store.countsByState() == [.pending: 1, .waiting: 1])
        #expect(try store.order(id: "G1")?.productID == "com.example.gems")
        // Each rejection is an err line with its message id, file and reason.
        let rejections = capture.records(with: .fileRejected)
        #expect(rejections.count == 14)
        #expect(rejections.allSatisfy { $0.level == .error && $0[.spoolFile] != nil && $0[.reason] != nil })
    }

    @Test("a symlink to a secret is never read: the secret is in neither the store nor a reason")
    func symlinkSecret() async throws {
        let store = try fixture.store()
        let secret = fixture.directory.write("secret.txt", OrderFixtures.orderJSON("STOLEN", receipt: "U0VDUkVU"))
        #expect(symlink(secret, fixture.layout.incoming + "/evil.json") == 0)
        _ = await ingestor(store).rescan()
        #expect(try store.order(id: "STOLEN") == nil)
        let database = try Data(contentsOf: URL(fileURLWithPath: fixture.directory.file("state/orders.db")))
        #expect(database.range(of: Data("STOLEN".utf8)) == nil)
        #expect(fixture.reason("evil.json")?.contains("STOLEN") == false)
        #expect(FileManager.default.fileExists(atPath: secret))
    }

    @Test("when the store fails, nothing is deleted or lost; the files wait in incoming/")
    func storeFailure() async throws {
        let spy = SpyStore(try fixture.store())
        spy.failure.withLock { $0 = DiskFull() }
        for index in 0..<5 { fixture.drop("o\(index).json", OrderFixtures.orderJSON("O\(index)")) }
        let capture = CapturingLogHandler()
        let summary = await ingestor(spy, logger: Logger(handler: capture)).rescan()
        #expect(summary.deferred == 5)
        #expect(summary.accepted == 0)
        #expect(fixture.incoming.count == 5)
        let error = try #require(capture.records(with: .storeUnavailable).first)
        #expect(error.level == .error)
        #expect(error[.reason] == "disk_full")

        spy.failure.withLock { $0 = nil }
        let retry = await ingestor(spy).rescan()
        #expect(retry.accepted == 5)
        #expect(fixture.incoming.isEmpty)
    }

    @Test("a file replaced under the same name after it was read is not deleted")
    func replacedAfterRead() async throws {
        let spy = SpyStore(try fixture.store())
        fixture.drop("same-name.json", OrderFixtures.orderJSON("FIRST"))
        let layout = fixture.layout
        let directory = fixture.directory
        spy.duringIngest.withLock {
            $0 = {
                let path = directory.write("spool/tmp/new", OrderFixtures.orderJSON("SECOND"))
                precondition(rename(path, layout.incoming + "/same-name.json") == 0)
            }
        }
        let ingest = ingestor(spy)
        _ = await ingest.rescan()
        #expect(try spy.order(id: "FIRST") != nil)
        #expect(fixture.incoming == ["same-name.json"])
        spy.duringIngest.withLock { $0 = nil }
        _ = await ingest.rescan()
        #expect(try spy.order(id: "SECOND") != nil)
        #expect(fixture.incoming.isEmpty)
    }

    @Test("group commit: many files per transaction")
    func batches() async throws {
        let spy = SpyStore(try fixture.store())
        for index in 0..<1100 { fixture.drop(String(format: "o%05d.json", index), OrderFixtures.orderJSON("O\(index)")) }
        let summary = await ingestor(spy, batchSize: 512).rescan()
        #expect(summary.accepted == 1100)
        #expect(spy.batches.withLock { $0 } == [512, 512, 76])
        #expect(fixture.incoming.isEmpty)
    }

    @Test("the same file twice is a no-op; a later file with new proof revives the order")
    func repeats() async throws {
        let store = try fixture.store()
        let ingest = ingestor(store)
        fixture.drop("a.json", OrderFixtures.orderJSON("A1", receipt: nil))
        _ = await ingest.rescan()
        fixture.drop("a.json", OrderFixtures.orderJSON("A1", receipt: nil))
        var summary = await ingest.rescan()
        #expect(summary.unchanged == 1)
        fixture.drop("a2.json", OrderFixtures.orderJSON("A1", receipt: "TkVX"))
        summary = await ingest.rescan()
        #expect(summary.proofReplaced == 1)
        #expect(try store.order(id: "A1")?.state == .pending)
        #expect(fixture.incoming.isEmpty)
    }

    @Test("the loop retries after a store failure until the files are in")
    func loopRetries() async throws {
        let spy = SpyStore(try fixture.store())
        spy.failure.withLock { $0 = DiskFull() }
        fixture.drop("a.json", OrderFixtures.orderJSON("A1"))
        let ingest = ingestor(spy)
        let (events, continuation) = AsyncStream<SpoolEvent>.makeStream()
        let loop = Task { await ingest.run(events: events) }
        continuation.yield(.rescan(reason: "test"))
        await clock.waitForTimers()  // the retry, 1 s away
        #expect(fixture.incoming == ["a.json"])
        spy.failure.withLock { $0 = nil }
        clock.advance(by: .seconds(1))
        #expect(await eventually { fixture.incoming.isEmpty })
        #expect(try spy.order(id: "A1") != nil)
        continuation.finish()
        await loop.value
    }

    @Test("the totals count each batch before the callback hears of it, rejected-only batches included")
    func totals() async throws {
        let store = try fixture.store()
        let heard = Mutex<[(batch: SpoolIngestor.Summary, total: SpoolIngestor.Summary)]>([])
        let box = Mutex<SpoolIngestor?>(nil)
        let ingest = SpoolIngestor(
            layout: fixture.layout, store: store, settings: .init(verifierKind: .apple, maxFileSize: 1024 * 1024, batchSize: 2),
            logger: .discarding, clock: clock,
            onCommitted: { batch in
                let total = box.withLock { $0 }!.total
                heard.withLock { $0.append((batch, total)) }
            })
        box.withLock { $0 = ingest }
        defer { box.withLock { $0 = nil } }  // the callback holds the ingestor: break the cycle
        for index in 0..<3 { fixture.drop("a\(index).json", OrderFixtures.orderJSON("A\(index)")) }
        _ = await ingest.rescan()
        fixture.drop("bad.json", "not json")
        _ = await ingest.rescan()
        fixture.drop("a0-again.json", OrderFixtures.orderJSON("A0"))
        _ = await ingest.rescan()

        let calls = heard.withLock { $0 }
        #expect(calls.map(\.batch.accepted) == [2, 1, 0, 0])
        #expect(calls.map(\.batch.rejected) == [0, 0, 1, 0])
        #expect(calls.map(\.batch.unchanged) == [0, 0, 0, 1])
        #expect(calls.map(\.total.filesHandled) == [2, 3, 4, 5])  // the batch is in the total already
        #expect(ingest.total.accepted == 3 && ingest.total.rejected == 1 && ingest.total.unchanged == 1)
    }

    @Test("a Play push of a one-time purchase is handed on to be confirmed with Google (not with Mode=off); the totals keep counts only, never the push")
    func playPurchasePushes() async throws {
        let store = try fixture.store()
        let heard = Mutex<[SpoolIngestor.Summary]>([])
        var settings = SpoolIngestor.Settings(verifierKind: .apple, maxFileSize: 1024 * 1024)
        settings.notifications = NotificationFileReader(appStore: nil, googlePlay: true)
        let ingest = SpoolIngestor(
            layout: fixture.layout, store: store, settings: settings, logger: .discarding, clock: clock,
            onCommitted: { batch in heard.withLock { $0.append(batch) } })
        func push(_ messageID: String, oneTime: Bool) -> String {
            let body = oneTime
                ? #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1","oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-SECRET","sku":"gems"}}"#
                : #"{"version":"1.0","packageName":"com.example.app","eventTimeMillis":"1","testNotification":{"version":"1.0"}}"#
            return #"{"message":{"data":"\#(Data(body.utf8).base64EncodedString())","messageId":"\#(messageID)"},"subscription":"projects/p/subscriptions/s"}"#
        }
        fixture.drop("p1.json", push("m-1", oneTime: true))
        fixture.drop("p2.json", push("m-2", oneTime: false))
        _ = await ingest.rescan()
        // The same push again is a duplicate: nothing more to confirm.
        fixture.drop("p1-again.json", push("m-1", oneTime: true))
        _ = await ingest.rescan()
        #expect(heard.withLock { $0 }.flatMap(\.playPurchasePushes).map(\.messageID) == ["m-1"])
        #expect(ingest.total.notifications == 2 && ingest.total.duplicates == 1 && ingest.total.playPurchasePushes.isEmpty)

        settings.discovery = DiscoverySettings(mode: .off)
        await ingest.apply(settings)
        fixture.drop("p3.json", push("m-3", oneTime: true))
        _ = await ingest.rescan()
        #expect(heard.withLock { $0 }.flatMap(\.playPurchasePushes).map(\.messageID) == ["m-1"])
    }

    // MARK: - Names are bytes (issue 13)

    @Test("a name that is not UTF-8 and an NFC/NFD pair are all read in one scan, the bad one quarantined as its bytes")
    func namesAreBytes() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        let latin1 = SpoolFileName([0x6F, 0x72, 0x64, 0x65, 0x72, 0xE9, 0x2E, 0x6A, 0x73, 0x6F, 0x6E])  // "order\xe9.json"
        let nfc = SpoolFileName("caf\u{E9}.json")
        let nfd = SpoolFileName("cafe\u{301}.json")
        let badLatin1 = SpoolFileName([0x62, 0x61, 0x64, 0xFF, 0x0A, 0x1B, 0x2E, 0x6A])  // "bad\xff\n\e.j"
        fixture.drop(latin1, bytes: Array(OrderFixtures.orderJSON("L1").utf8))
        fixture.drop(nfc, bytes: Array(OrderFixtures.orderJSON("NFC").utf8))
        fixture.drop(nfd, bytes: Array(OrderFixtures.orderJSON("NFD").utf8))
        fixture.drop(badLatin1, bytes: Array("not json".utf8))
        #expect(fixture.incomingNames.count == 4)

        let summary = await ingestor(store, logger: Logger(handler: capture)).rescan()
        #expect(summary.accepted == 3)
        #expect(summary.rejected == 1)
        #expect(fixture.incomingNames.isEmpty)
        for id in ["L1", "NFC", "NFD"] { #expect(try store.order(id: id) != nil, "\(id) not stored") }
        #expect(Set(fixture.rejectedNames) == [badLatin1, Quarantine.reasonName(of: badLatin1)])
        let reason = fixture.readRejected(Quarantine.reasonName(of: badLatin1)).map { String(decoding: $0, as: UTF8.self) }
        #expect(reason?.hasPrefix("file: bad\\xff\\n\\x1b.j\n") == true, "\(reason ?? "none")")
        let logged = try #require(capture.records(with: .fileRejected).first)
        #expect(logged[.spoolFile] == "bad\\xff\\n\\x1b.j")
        #expect(!logged.message.unicodeScalars.contains { $0.value < 0x20 }, "\(logged.message)")
    }

    @Test("an NFC/NFD pair both rejected: each keeps its own bytes and its own reason (Swift's String == holds them equal)")
    func canonicallyEqualNamesRejectedApart() async throws {
        let store = try fixture.store()
        let nfc = SpoolFileName("caf\u{E9}.json")
        let nfd = SpoolFileName("cafe\u{301}.json")
        fixture.drop(nfc, bytes: Array("composed, not json".utf8))
        fixture.drop(nfd, bytes: Array("decomposed, not json".utf8))

        let summary = await ingestor(store).process([nfc, nfd])
        #expect(summary.rejected == 2)
        #expect(Set(fixture.rejectedNames) == [nfc, nfd, Quarantine.reasonName(of: nfc), Quarantine.reasonName(of: nfd)])
        #expect(fixture.readRejected(nfc) == Array("composed, not json".utf8))
        #expect(fixture.readRejected(nfd) == Array("decomposed, not json".utf8))
        for name in [nfc, nfd] {
            let reason = fixture.readRejected(Quarantine.reasonName(of: name)) ?? []
            #expect(reason.starts(with: Array("file: \(name.escaped)\n".utf8)), "\(name.escaped): \(String(decoding: reason, as: UTF8.self))")
        }
    }

    @Test("names from inotify are bytes too: a non-UTF-8 name arriving is read")
    func arrivedBytes() async throws {
        let store = try fixture.store()
        let name = SpoolFileName([0x78, 0xC3, 0x28, 0x2E, 0x6A])  // an invalid two-byte sequence
        fixture.drop(name, bytes: Array(OrderFixtures.orderJSON("X1").utf8))
        let summary = await ingestor(store).process([name, name])
        #expect(summary.accepted == 1)
        #expect(fixture.incomingNames.isEmpty)
    }

    @Test("an invalid file with a 250-byte name is quarantined at once, not retried")
    func longInvalidName() async throws {
        let store = try fixture.store()
        let name = String(repeating: "x", count: 245) + ".json"
        fixture.drop(name, "not json")
        let summary = await ingestor(store).rescan()
        #expect(summary.rejected == 1)
        #expect(summary.deferred == 0)
        #expect(fixture.incoming.isEmpty)
        let reasons = fixture.rejected.filter { $0.hasSuffix(".reason") }
        #expect(reasons.count == 1)
        #expect(fixture.directory.read("spool/rejected/\(reasons[0])")?.hasPrefix("file: \(name)\n") == true)
    }

    // MARK: - The loop ends at once (issue 13)

    @Test("files waiting for a failed store do not hold up the end of the loop, nor a stop request")
    func stopEndsRetries() async throws {
        for stopping in [false, true] {
            let fixture = SpoolFixture()
            let spy = SpyStore(try fixture.store())
            spy.failure.withLock { $0 = DiskFull() }
            fixture.drop("a.json", OrderFixtures.orderJSON("A1"))
            let clock = ManualClock()
            let ingest = SpoolIngestor(
                layout: fixture.layout, store: spy, settings: .init(verifierKind: .apple, maxFileSize: 1 << 20), logger: .discarding, clock: clock)
            let (events, continuation) = AsyncStream<SpoolEvent>.makeStream()
            let ended = Atomic<Bool>(false)
            let loop = Task {
                await ingest.run(events: events)
                ended.store(true, ordering: .relaxed)
            }
            continuation.yield(.rescan(reason: "test"))
            // Into the retries (after 1 s, then 2 s): the next one is 4 s away.
            for delay in [1, 2] {
                await clock.waitForTimers()
                clock.advance(by: .seconds(delay))
            }
            await clock.waitForTimers()
            #expect(spy.batches.withLock { $0.count } == 3, "not three tries")
            #expect(clock.pendingDeadlines == [clock.instant() + .seconds(4)])
            if stopping { ingest.stop() } else { continuation.finish() }
            let done = await eventually { ended.load(ordering: .relaxed) }
            #expect(done, "the loop is still retrying (stop: \(stopping))")
            // At once, not at the next retry (the clock never got there): no further batch was
            // tried, and the retry's timer is gone.
            #expect(spy.batches.withLock { $0.count } == 3, "a retry ran after the stop")
            #expect(clock.pendingDeadlines.isEmpty, "the retry still waits")
            continuation.finish()
            loop.cancel()
            await loop.value
            #expect(fixture.incoming == ["a.json"], "nothing is lost")
        }
    }

    @Test("while files wait for a retry, a new file is read at once")
    func newFilesDoNotWait() async throws {
        let spy = SpyStore(try fixture.store())
        let ingest = ingestor(spy)
        // rejected/ unusable: the bad file waits in incoming/ for the retry.
        #expect(rename(fixture.layout.rejected, fixture.layout.rejected + ".away") == 0)
        #expect(symlink(fixture.directory.file("nowhere"), fixture.layout.rejected) == 0)
        fixture.drop("bad.json", "not json")
        let (events, continuation) = AsyncStream<SpoolEvent>.makeStream()
        let loop = Task { await ingest.run(events: events) }
        continuation.yield(.rescan(reason: "test"))
        await clock.waitForTimers()  // the bad file's retry
        fixture.drop("good.json", OrderFixtures.orderJSON("G1"))
        continuation.yield(.arrived([SpoolFileName("good.json")]))
        // The clock stands still: the retry cannot have come.
        #expect(await eventually { (try? spy.order(id: "G1")) != nil }, "the new file waited for the retry")
        continuation.finish()
        await loop.value
        #expect(fixture.incoming == ["bad.json"])
    }

    @Test("one info summary per interval: at once after a quiet spell, then the rest of a drop in one line when the interval ends")
    func summaryPerInterval() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        let ingest = ingestor(store, logger: Logger(handler: capture, minimumLevel: .info))
        let (events, continuation) = AsyncStream<SpoolEvent>.makeStream()
        let loop = Task { await ingest.run(events: events) }
        func summaries() -> [String] { capture.records.filter { $0.message.hasPrefix("accepted ") }.map(\.message) }

        fixture.drop("a.json", OrderFixtures.orderJSON("A1"))
        continuation.yield(.arrived([SpoolFileName("a.json")]))
        #expect(await eventually { summaries() == ["accepted 1 new order from 1 spool file"] }, "\(summaries())")
        // Three more inotify batches within the interval: no line yet.
        for (index, name) in ["b", "c", "d"].enumerated() {
            fixture.drop("\(name).json", OrderFixtures.orderJSON("B\(index)"))
            continuation.yield(.arrived([SpoolFileName("\(name).json")]))
        }
        #expect(await eventually { fixture.incoming.isEmpty })
        await clock.waitForTimers()
        #expect(summaries().count == 1)
        clock.advance(by: .seconds(10))
        #expect(await eventually { summaries().count == 2 }, "\(summaries())")
        #expect(summaries().last == "accepted 3 new orders from 3 spool files")
        continuation.finish()
        await loop.value
        #expect(summaries().count == 2, "nothing left to say at the end")
    }

    @Test("an inotify queue overflow is a notice, once per overflow, and a rescan")
    func overflowNotice() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        fixture.drop("a.json", OrderFixtures.orderJSON("A1"))
        let ingest = ingestor(store, logger: Logger(handler: capture, minimumLevel: .info))
        let (events, continuation) = AsyncStream<SpoolEvent>.makeStream()
        continuation.yield(.overflow)
        continuation.finish()
        await ingest.run(events: events)
        let notices = capture.records.filter { $0.level == .notice && $0.message.contains("overflowed") }
        #expect(notices.count == 1)
        #expect(try store.order(id: "A1") != nil)
    }

    // MARK: - Spool directories (issue 12)

    @Test("incoming/ swapped for a symlink: never followed (nothing there read, deleted or quarantined), err once; the real one used when back")
    func incomingSwappedForSymlink() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        let ingest = ingestor(store, logger: Logger(handler: capture))
        fixture.drop("first.json", OrderFixtures.orderJSON("F1"))
        #expect(await ingest.rescan().accepted == 1)  // incoming/ is held open now

        let victim = fixture.directory.file("victim")
        try FileManager.default.createDirectory(atPath: victim, withIntermediateDirectories: true)
        fixture.directory.write("victim/secret.json", OrderFixtures.orderJSON("STOLEN"))
        fixture.directory.write("victim/junk.json", "not json")
        let incoming = fixture.layout.incoming
        #expect(rename(incoming, incoming + ".real") == 0)
        #expect(symlink(victim, incoming) == 0)
        fixture.directory.write("spool/incoming.real/waiting.json", OrderFixtures.orderJSON("W1"))

        for _ in 0..<3 { #expect(await ingest.rescan().deferred > 0) }
        #expect(await ingest.process([SpoolFileName("secret.json")]).deferred > 0)
        #expect(fixture.directory.list("victim") == ["junk.json", "secret.json"], "the target was touched")
        #expect(try store.order(id: "STOLEN") == nil)
        #expect(fixture.rejected.isEmpty)
        let refusals = capture.records(with: .spoolDirectoryRefused)
        #expect(refusals.count == 1, "\(refusals.map(\.message))")
        #expect(refusals.first?.level == .error)
        #expect(refusals.first?.message.contains("\(incoming) is a symbolic link") == true)
        #expect(refusals.first?[.path] == incoming)

        #expect(unlink(incoming) == 0)
        #expect(rename(incoming + ".real", incoming) == 0)
        #expect(await ingest.rescan().accepted == 1)
        #expect(try store.order(id: "W1") != nil)
        #expect(capture.records.contains { $0.level == .notice && $0.message.contains("\(incoming) is a directory of the spool again") })
    }

    @Test("incoming/ removed and re-created (no inotify): the next rescan reads the new directory, not the stale descriptor")
    func staleIncomingDescriptor() async throws {
        let store = try fixture.store()
        let ingest = ingestor(store)
        fixture.drop("a.json", OrderFixtures.orderJSON("A1"))
        #expect(await ingest.rescan().accepted == 1)
        let incoming = fixture.layout.incoming
        #expect(rename(incoming, incoming + ".old") == 0)
        #expect(mkdir(incoming, 0o770) == 0)
        fixture.drop("b.json", OrderFixtures.orderJSON("B1"))
        #expect(await ingest.rescan().accepted == 1)
        #expect(try store.order(id: "B1") != nil)
        #expect(fixture.incoming.isEmpty)

        // The whole spool removed and made again.
        try FileManager.default.removeItem(atPath: fixture.layout.root)
        try SpoolLayout(root: fixture.layout.root).prepare()
        fixture.drop("c.json", OrderFixtures.orderJSON("C1"))
        #expect(await ingest.rescan().accepted == 1)
        #expect(try store.order(id: "C1") != nil)
    }

    @Test("rejected/ swapped for a symlink to a world-writable directory: nothing is quarantined there; the file waits until it is back")
    func rejectedSwappedForSymlink() async throws {
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        let ingest = ingestor(store, logger: Logger(handler: capture))
        let open = fixture.directory.file("world")
        try FileManager.default.createDirectory(atPath: open, withIntermediateDirectories: true)
        #expect(chmod(open, 0o1777) == 0)
        let rejected = fixture.layout.rejected
        #expect(rename(rejected, rejected + ".real") == 0)
        #expect(symlink(open, rejected) == 0)
        fixture.drop("bad.json", "not json")
        #expect(await ingest.rescan().deferred == 1)
        #expect(await ingest.rescan().deferred == 1)
        #expect(fixture.directory.list("world").isEmpty, "quarantined into the link's target")
        #expect(fixture.incoming == ["bad.json"])
        #expect(capture.records(with: .spoolDirectoryRefused).map { $0[.path] } == [rejected])
        #expect(capture.records(with: .fileRejected).isEmpty)

        #expect(unlink(rejected) == 0)
        #expect(rename(rejected + ".real", rejected) == 0)
        #expect(await ingest.rescan().rejected == 1)
        #expect(fixture.rejected == ["bad.json", "bad.json.reason"])
    }

    @Test("a subdirectory someone else made (a producer, after the real one went) is not used")
    func foreignOwner() async throws {
        guard geteuid() == 0 else { return }  // needs to chown
        let store = try fixture.store()
        let capture = CapturingLogHandler()
        let ingest = ingestor(store, logger: Logger(handler: capture))
        let incoming = fixture.layout.incoming
        #expect(rename(incoming, incoming + ".real") == 0)
        #expect(mkdir(incoming, 0o777) == 0)
        #expect(chown(incoming, 65534, 65534) == 0)
        fixture.drop("planted.json", OrderFixtures.orderJSON("P1"))
        #expect(await ingest.rescan().deferred == 1)
        #expect(try store.order(id: "P1") == nil)
        #expect(capture.records(with: .spoolDirectoryRefused).first?.message.contains("belongs to uid 65534") == true)
    }
}
