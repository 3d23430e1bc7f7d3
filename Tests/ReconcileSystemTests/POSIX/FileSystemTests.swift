import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSystem

@Suite("File system helpers")
struct FileSystemTests {
    let directory = TemporaryDirectory(prefix: "fs")

    @Test("atomic writes replace whole files and leave no temporary behind")
    func atomicWrite() throws {
        let path = directory.file("metrics.prom")
        try FileSystem.writeAtomically(path, Array("one\n".utf8), mode: 0o644)
        try FileSystem.writeAtomically(path, Array("two\n".utf8), mode: 0o600)
        #expect(directory.read("metrics.prom") == "two\n")
        #expect(directory.list(".") == ["metrics.prom"])
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
    }

    @Test("directories are made with exactly the mode asked, umask notwithstanding")
    func makeDirectory() throws {
        let path = directory.file("a/b/spool")
        #expect(try FileSystem.makeDirectory(path, mode: 0o2770))
        #expect(try !FileSystem.makeDirectory(path, mode: 0o700))
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o2770)
        directory.write("file", "x")
        #expect(throws: SystemError.self) { try FileSystem.makeDirectory(directory.file("file"), mode: 0o700) }
    }

    @Test("bounded reads and directory listings")
    func readAndList() throws {
        directory.write("d/one", "12345")
        directory.write("d/two", "")
        #expect(try FileSystem.readFile(directory.file("d/one")) == Array("12345".utf8))
        #expect(throws: SystemError.self) { _ = try FileSystem.readFile(directory.file("d/one"), limit: 4) }
        #expect(try FileSystem.listDirectory(directory.file("d")).sorted() == ["one", "two"])
        #expect(throws: SystemError.self) { _ = try FileSystem.listDirectory(directory.file("missing")) }
    }

    /// glibc packs readdir's entries by their real length into a 32 KiB buffer, so the last
    /// entry of a full buffer is shorter than a `struct dirent` (280 bytes) and ends at the
    /// buffer's end; copying a whole entry read past it (AddressSanitizer found it in the spool's
    /// rescan). 2,000 names of 8 characters (32-byte entries) fill the buffer exactly;
    /// `scripts/test-sanitized address` catches a regression here.
    @Test("directory listings read each name in place, up to the end of readdir's buffer")
    func listingAFullBuffer() throws {
        #expect(try FileSystem.makeDirectory(directory.file("names"), mode: 0o700))
        let expected = (0..<2000).map { "f" + String(1_000_000 + $0).dropFirst() }
        for name in expected {
            let descriptor = open(directory.file("names/\(name)"), O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            try #require(descriptor >= 0)
            close(descriptor)
        }
        #expect(try FileSystem.listDirectory(directory.file("names")).sorted() == expected)
    }

    @Test("path helpers")
    func paths() {
        #expect(FileSystem.parentDirectory(of: "/a/b/c") == "/a/b")
        #expect(FileSystem.parentDirectory(of: "/a") == "/")
        #expect(FileSystem.parentDirectory(of: "a") == ".")
        #expect(FileSystem.baseName(of: "/a/b/c.db") == "c.db")
    }

    @Test("system errors say which call failed, on which path, and why")
    func errors() {
        let error = SystemError(errno: ENOENT, operation: "open", path: "/x")
        #expect(error.description == "open /x: No such file or directory")
        #expect(error.isNotFound)
        #expect(SystemError(errno: ENOSPC, operation: "write").isNoSpace)
    }
}
