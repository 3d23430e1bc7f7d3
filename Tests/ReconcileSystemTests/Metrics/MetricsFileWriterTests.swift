import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("Metrics file writer")
struct MetricsFileWriterTests {
    let directory = TemporaryDirectory(prefix: "metrics")

    func identity(_ path: String) -> (inode: UInt64, mode: UInt32)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_ino), UInt32(info.st_mode & 0o7777))
    }

    /// The failure of one write, if it failed.
    func failure(_ writer: inout MetricsFileWriter, _ text: String) -> MetricsFileWriter.Failure? {
        do {
            try writer.write(text)
            return nil
        } catch {
            return error
        }
    }

    @Test("writes the text whole, mode 0644, and leaves no temporary file behind")
    func writes() throws {
        let path = directory.file("reconciled.prom")
        var writer = MetricsFileWriter(path: path)
        #expect(try writer.write("a 1\n"))
        #expect(directory.read("reconciled.prom") == "a 1\n")
        #expect(identity(path)?.mode == 0o644)
        #expect(try writer.write("a 2\n"))
        #expect(directory.read("reconciled.prom") == "a 2\n")
        #expect(directory.list(".") == ["reconciled.prom"])
    }

    @Test("unchanged text is not written again; changed text, or a file removed or replaced meanwhile, is")
    func unchanged() throws {
        let path = directory.file("reconciled.prom")
        var writer = MetricsFileWriter(path: path)
        #expect(try writer.write("a 1\n"))
        let first = try #require(identity(path))
        #expect(try !writer.write("a 1\n"))
        #expect(identity(path)?.inode == first.inode)

        #expect(try writer.write("a 2\n"))
        let second = try #require(identity(path))
        #expect(second.inode != first.inode)  // a new file renamed over the old one

        #expect(unlink(path) == 0)
        #expect(try writer.write("a 2\n"))
        #expect(directory.read("reconciled.prom") == "a 2\n")

        directory.write("reconciled.prom", "someone else's\n")
        #expect(try writer.write("a 2\n"))
        #expect(directory.read("reconciled.prom") == "a 2\n")
    }

    @Test("a reader never sees part of a file, however large and however often it changes")
    func noPartialFile() async throws {
        let path = directory.file("reconciled.prom")
        let texts = [String(repeating: "a 1\n", count: 50_000), String(repeating: "b 22\n", count: 70_000)]
        let done = Atomic<Bool>(false)
        let readCount = Atomic<Int>(0)
        let badCount = Atomic<Int>(0)
        let readerEnded = DispatchSemaphore(value: 0)
        // The reader is a thread of its own, started here: a task would need one of the
        // cooperative pool's two threads to start, which a busy suite may not free for seconds.
        let reader = Thread {
            while !done.load(ordering: .acquiring) {
                guard let data = FileManager.default.contents(atPath: path) else { continue }
                readCount.add(1, ordering: .relaxed)
                if !texts.contains(String(decoding: data, as: UTF8.self)) { badCount.add(1, ordering: .relaxed) }
            }
            readerEnded.signal()
        }
        reader.start()
        try await offPool {
            // At least 60 writes, and on until the reader has read 50 times (on a busy machine
            // its thread may start late), for 20 s at most.
            var writer = MetricsFileWriter(path: path)
            let deadline = ContinuousClock.now + TestTime.scaled(.seconds(20))
            var round = 0
            while round < 60 || (readCount.load(ordering: .relaxed) < 50 && ContinuousClock.now < deadline) {
                try writer.write(texts[round % 2])
                round += 1
            }
            done.store(true, ordering: .releasing)
            readerEnded.wait()
        }
        let reads = readCount.load(ordering: .relaxed)
        let bad = badCount.load(ordering: .relaxed)
        #expect(reads > 0)
        #expect(bad == 0, "\(bad) of \(reads) reads saw a partial file")
        #expect(directory.list(".") == ["reconciled.prom"])
    }

    @Test("a directory that is missing, or not a directory, is an error naming the file; the write is tried afresh next time")
    func failures() throws {
        var missing = MetricsFileWriter(path: directory.file("absent/reconciled.prom"))
        let error = try #require(failure(&missing, "a 1\n"))
        #expect(error.description.hasPrefix("cannot write the metrics file \(directory.file("absent/reconciled.prom")): open "))
        #expect(error.description.contains("No such file or directory"))
        #expect(error.underlying.errno == ENOENT)

        directory.write("plain", "x")
        var notDirectory = MetricsFileWriter(path: directory.file("plain/reconciled.prom"))
        #expect(failure(&notDirectory, "a 1\n")?.underlying.errno == ENOTDIR)

        // A failure keeps nothing in mind: the same text is tried again next time.
        let path = directory.file("later/reconciled.prom")
        var later = MetricsFileWriter(path: path)
        #expect(failure(&later, "a 1\n") != nil)
        try FileManager.default.createDirectory(atPath: directory.file("later"), withIntermediateDirectories: false)
        #expect(try later.write("a 1\n"))
        #expect(directory.read("later/reconciled.prom") == "a 1\n")
    }

    @Test("a failed write does not forget the file written before: a removal still removes it, the next write replaces it")
    func failureKeepsFile() throws {
        // The directory is reached through a symbolic link, pointed away (the write fails, the
        // file stays) and back.
        let real = directory.file("real")
        try FileManager.default.createDirectory(atPath: real, withIntermediateDirectories: false)
        let link = directory.file("link")
        func point(_ target: String) {
            unlink(link)
            #expect(symlink(target, link) == 0)
        }
        point(real)
        let path = link + "/reconciled.prom"
        var writer = MetricsFileWriter(path: path)
        #expect(try writer.write("a 1\n"))
        point(directory.file("absent"))
        #expect(failure(&writer, "a 2\n")?.underlying.errno == ENOENT)
        point(real)
        #expect(directory.read("real/reconciled.prom") == "a 1\n")

        var copy = writer
        let removed = copy.removeWritten()
        #expect(removed, "the file written before the failure was forgotten")
        #expect(!FileSystem.exists(path))

        #expect(try writer.write("a 2\n"))  // the failed text, written now, over nothing
        #expect(directory.read("real/reconciled.prom") == "a 2\n")
        point(directory.file("absent"))
        #expect(failure(&writer, "a 3\n") != nil)
        point(real)
        #expect(try !writer.write("a 2\n"))  // still holds exactly that: nothing to do
        #expect(try writer.write("a 3\n"))
        #expect(directory.read("real/reconciled.prom") == "a 3\n")
        let removedLast = writer.removeWritten()
        #expect(removedLast)
        #expect(directory.list("real").isEmpty)
    }

    @Test("removing the written file removes only a file this writer wrote")
    func remove() throws {
        let path = directory.file("reconciled.prom")
        var writer = MetricsFileWriter(path: path)
        var removed = writer.removeWritten()
        #expect(!removed)
        try writer.write("a 1\n")
        removed = writer.removeWritten()
        #expect(removed)
        #expect(!FileSystem.exists(path))

        try writer.write("a 1\n")
        directory.write("reconciled.prom", "someone else's\n")
        removed = writer.removeWritten()
        #expect(!removed)
        #expect(directory.read("reconciled.prom") == "someone else's\n")
    }
}
