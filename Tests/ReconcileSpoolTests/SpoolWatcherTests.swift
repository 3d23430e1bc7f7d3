import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool watch (inotify)")
struct SpoolWatcherTests {
    let fixture = SpoolFixture()

    func collect(_ body: (SpoolWatcher) throws -> Void, until done: ([SpoolWatcher.Event]) -> Bool) async throws -> [SpoolWatcher.Event] {
        let events = Mutex<[SpoolWatcher.Event]>([])
        let watcher = try SpoolWatcher(directory: fixture.layout.incoming) { event in events.withLock { $0.append(event) } }
        defer { watcher.cancel() }
        try body(watcher)
        _ = await eventually(timeout: .seconds(2), every: .milliseconds(20)) { done(events.withLock { $0 }) }
        return events.withLock { $0 }
    }

    static func names(_ events: [SpoolWatcher.Event]) -> Set<String> {
        var names = Set<String>()
        for case .arrived(let list) in events { names.formUnion(list.map(\.escaped)) }
        return names
    }

    @Test("reports names renamed in and files closed after writing")
    func arrivals() async throws {
        let events = try await collect({ _ in
            fixture.drop("moved.json", "{}")
            let descriptor = open(fixture.layout.incoming + "/written.json", O_WRONLY | O_CREAT, 0o600)
            close(descriptor)
        }, until: { Self.names($0).count == 2 })
        #expect(Self.names(events) == ["moved.json", "written.json"])
    }

    @Test("reports the directory going away")
    func gone() async throws {
        let events = try await collect({ _ in
            try FileManager.default.removeItem(atPath: fixture.layout.incoming)
        }, until: { $0.contains(.directoryGone) })
        #expect(events.contains(.directoryGone))
    }

    @Test("reports the directory going away while something holds it open (as the ingestor does), and the spool root moved away")
    func goneWhileHeld() async throws {
        let held = open(fixture.layout.incoming, O_RDONLY | O_DIRECTORY)
        #expect(held >= 0)
        defer { close(held) }
        let removed = try await collect({ _ in
            try FileManager.default.removeItem(atPath: fixture.layout.incoming)
        }, until: { $0.contains(.directoryGone) })
        #expect(removed.contains(.directoryGone))

        try FileManager.default.createDirectory(atPath: fixture.layout.incoming, withIntermediateDirectories: true)
        let moved = try await collect({ _ in
            #expect(rename(fixture.layout.root, fixture.layout.root + ".old") == 0)
        }, until: { $0.contains(.directoryGone) })
        #expect(moved.contains(.directoryGone))
        _ = rename(fixture.layout.root + ".old", fixture.layout.root)
    }

    @Test("decodes inotify records, including an overflow")
    func parsing() {
        func record(mask: UInt32, name: String) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: mask.littleEndian) { bytes.replaceSubrange(4..<8, with: $0) }
            let padded = Array(name.utf8) + [UInt8](repeating: 0, count: 16 - name.utf8.count % 16)
            withUnsafeBytes(of: UInt32(name.isEmpty ? 0 : padded.count).littleEndian) { bytes.replaceSubrange(12..<16, with: $0) }
            return bytes + (name.isEmpty ? [] : padded)
        }
        let bytes = record(mask: UInt32(IN_MOVED_TO), name: "a.json") + record(mask: UInt32(IN_Q_OVERFLOW), name: "")
            + record(mask: UInt32(IN_CLOSE_WRITE), name: "b.json")
        #expect(SpoolWatcher.parse(bytes[...]) == [.arrived([SpoolFileName("a.json"), SpoolFileName("b.json")]), .overflow])
    }

    @Test("names are bytes (not UTF-8, NFC and NFD kept apart), and overflow records read at once are one overflow")
    func parsingBytes() {
        func record(mask: UInt32, name: [UInt8]) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 16)
            withUnsafeBytes(of: mask.littleEndian) { bytes.replaceSubrange(4..<8, with: $0) }
            let padded = name + [UInt8](repeating: 0, count: 16 - name.count % 16)
            withUnsafeBytes(of: UInt32(name.isEmpty ? 0 : padded.count).littleEndian) { bytes.replaceSubrange(12..<16, with: $0) }
            return bytes + (name.isEmpty ? [] : padded)
        }
        let latin1: [UInt8] = [0x63, 0x61, 0x66, 0xE9, 0x2E, 0x6A]  // "caf\xe9.j"
        let nfc = Array("caf\u{E9}.json".utf8)
        let nfd = Array("cafe\u{301}.json".utf8)
        let bytes = record(mask: UInt32(IN_MOVED_TO), name: latin1) + record(mask: UInt32(IN_Q_OVERFLOW), name: [])
            + record(mask: UInt32(IN_MOVED_TO), name: nfc) + record(mask: UInt32(IN_Q_OVERFLOW), name: [])
            + record(mask: UInt32(IN_MOVED_TO), name: nfd)
        #expect(SpoolWatcher.parse(bytes[...]) == [.arrived([SpoolFileName(latin1), SpoolFileName(nfc), SpoolFileName(nfd)]), .overflow])
    }

    @Test("incoming/ swapped for a symlink: reported, and the link is never watched; the real directory back: reported")
    func swappedForSymlink() async throws {
        let target = fixture.directory.file("target")
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        let incoming = fixture.layout.incoming
        let swapped = try await collect({ _ in
            #expect(rename(incoming, incoming + ".real") == 0)
            #expect(symlink(target, incoming) == 0)
        }, until: { $0.contains(.directoryGone) })
        #expect(swapped.contains(.directoryGone))

        // A watcher started while the link is there watches the parent only.
        let events = Mutex<[SpoolWatcher.Event]>([])
        let watcher = try SpoolWatcher(directory: incoming) { event in events.withLock { $0.append(event) } }
        defer { watcher.cancel() }
        fixture.directory.write("target/in-target.json", "{}")
        #expect(unlink(incoming) == 0)
        #expect(rename(incoming + ".real", incoming) == 0)
        // One inotify queue holds the watcher's events in the order they happened: a report of
        // the file in the link's target would come before the parent's change that follows it.
        _ = await eventually(timeout: .seconds(2), every: .milliseconds(20)) { events.withLock { $0 }.contains(.directoryGone) }
        let seen = events.withLock { $0 }
        #expect(seen.contains(.directoryGone))
        #expect(seen.prefix { $0 != .directoryGone }.isEmpty, "a file in the link's target was reported: \(seen)")
    }

    @Test("a directory whose parent does not exist cannot be watched; one that is missing itself is awaited in its parent")
    func missing() {
        #expect(throws: (any Error).self) { _ = try SpoolWatcher(directory: fixture.directory.file("nope/incoming")) { _ in } }
        #expect(throws: Never.self) { _ = try SpoolWatcher(directory: fixture.directory.file("nope")) { _ in } }
    }
}
