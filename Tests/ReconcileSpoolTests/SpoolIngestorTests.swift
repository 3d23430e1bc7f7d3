import Foundation
import Glibc
import ReconcileCore
import ReconcileStore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSpool

/// Wraps a store to count batches, inject failures, or act in the middle of a commit.
final class SpyStore: OrderIngesting {
    let inner: any OrderStore
    let batches = Mutex<[Int]>([])
    let failure = Mutex<(any Error)?>(nil)
    let duringIngest = Mutex<(@Sendable () -> Void)?>(nil)

    init(_ inner: any OrderStore) { self.inner = inner }

    func ingest(_ candidates: [IngestCandidate], verifierKind: VerifierKind, now: Date) throws -> [IngestOutcome] {
        batches.withLock { $0.append(candidates.count) }
        if let error = failure.withLock({ $0 }) { throw error }
        duringIngest.withLock { $0 }?()
        return try inner.ingest(candidates, verifierKind: verifierKind, now: now)
    }

    func order(id orderID: String) throws -> StoredOrder? { try inner.order(id: orderID) }
}

struct DiskFull: Error, ClassifiedStoreError {
    var storeFailure: StoreFailure { .diskFull }
}

@Suite("Spool ingest")
struct SpoolIngestorTests {
    let fixture = SpoolFixture()

    func ingestor(_ store: any OrderIngesting, logger: Logger = .discarding, batchSize: Int = 512) -> SpoolIngestor {
        SpoolIngestor(
            layout: fixture.layout, store: store,
            settings: .init(verifierKind: .apple, maxFileSize: 1024 * 1024, batchSize: batchSize), logger: logger)
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
        try await Task.sleep(for: .milliseconds(300))
        #expect(fixture.incoming == ["a.json"])
        spy.failure.withLock { $0 = nil }
        for _ in 0..<60 where !fixture.incoming.isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        #expect(fixture.incoming.isEmpty)
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
            logger: .discarding,
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
}
