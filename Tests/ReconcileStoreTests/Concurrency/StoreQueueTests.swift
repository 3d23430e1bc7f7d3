import Dispatch
import Foundation
import ReconcileCore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSQLite
@testable import ReconcileStore
import ReconcileFoundation

/// The store's own threads (``SerializedStore``): a task awaits a store call without holding a
/// thread of the cooperative pool, and a report is read while a write holds the writer.
@Suite("Store threads")
struct StoreQueueTests {
    @Test("a write and a read blocked on the store's threads leave the cooperative pool free, and the read does not wait for the write", .timeLimit(.minutes(1)))
    func ownThreads() async throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        _ = try store.ingest([candidate("o-1")], verifiers: ConfiguredVerifiers(kind: .http), now: Date())
        let writerRuns = DispatchSemaphore(value: 0)
        let writerMayEnd = DispatchSemaphore(value: 0)
        let readerMayEnd = DispatchSemaphore(value: 0)
        let write = Task { try await store.writing { writerRuns.signal(); writerMayEnd.wait(); return try store.countsByState() } }
        await Task.detached { writerRuns.wait() }.value
        // The writer thread is blocked; a read goes on all the same.
        // (The STATUS= line's count, on SQLite's read-only connection; a read on the main
        // connection waits for the writer's turn.)
        let read = Task { try await store.reading { let counts = try store.countsByState(in: [.pending]); readerMayEnd.wait(); return counts } }
        // Both store threads are blocked. On a machine with two cores the cooperative pool has
        // two threads: were the store calls running on them, nothing else could run now.
        let pooled = await withTaskGroup(of: Int.self) { group in
            for number in 1...8 { group.addTask { await Task.yield(); return number } }
            return await group.reduce(0, +)
        }
        #expect(pooled == 36)
        readerMayEnd.signal()
        #expect(try await read.value[.pending] == 1)
        writerMayEnd.signal()
        #expect(try await write.value[.pending] == 1)
    }

    @Test("a caller on a thread of its own uses the connection on the store's writer; a store call inside writing runs at once", .timeLimit(.minutes(1)))
    func connectionOnTheWriter() async throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        #expect(!store.queue.writer.isCurrent)
        let fromAThread = await Task.detached { try? store.withConnection { _ in store.queue.writer.isCurrent } }.value
        #expect(fromAThread == true)
        // Were it sent to the writer again, it would wait for itself for ever.
        let nested = try await store.writing { try store.withConnection { _ in store.queue.writer.isCurrent } }
        #expect(nested)
    }

    @Test("the store's writes run one at a time, each to its end")
    func writesInOrder() async throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        final class Record: Sendable {
            let running = Mutex(0)
            let order = Mutex<[Int]>([])
        }
        let record = Record()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<20 {
                group.addTask {
                    try await store.writing {
                        let overlapping = record.running.withLock { $0 += 1; return $0 }
                        defer { record.running.withLock { $0 -= 1 } }
                        #expect(overlapping == 1, "two writes ran at once")
                        _ = try store.ingest([candidate("o-\(number)")], verifiers: ConfiguredVerifiers(kind: .http), now: Date())
                        record.order.withLock { $0.append(number) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(record.order.withLock { $0 }.sorted() == Array(0..<20))
        #expect(try store.countsByState()[.pending] == 20)
    }
}
