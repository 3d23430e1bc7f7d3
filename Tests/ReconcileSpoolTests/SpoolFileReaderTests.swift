import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool file reader")
struct SpoolFileReaderTests {
    let fixture = SpoolFixture()
    let reader = SpoolFileReader(maximumSize: 1024)

    func read(_ name: String) -> SpoolFileReader.Result {
        let descriptor = open(fixture.layout.incoming, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        return reader.read(SpoolFileName(name), in: descriptor)
    }

    func problemCode(_ name: String) -> OrderFileProblem.Code? {
        if case .problem(let problem) = read(name) { return problem.code }
        return nil
    }

    @Test("reads a regular file and its identity")
    func regular() {
        fixture.drop("a.json", "{}")
        guard case .contents(let bytes, let identity) = read("a.json") else { Issue.record("not read"); return }
        #expect(bytes == Array("{}".utf8))
        var info = stat()
        #expect(stat(fixture.layout.incoming + "/a.json", &info) == 0)
        #expect(identity.inode == UInt64(info.st_ino))
    }

    @Test("never follows a symlink, even to a readable secret")
    func symlinks() {
        let secret = fixture.directory.write("secret.txt", "TOP-SECRET")
        #expect(symlink(secret, fixture.layout.incoming + "/link.json") == 0)
        #expect(problemCode("link.json") == .symlink)
    }

    @Test("refuses FIFOs without blocking, directories, sockets")
    func specialFiles() {
        #expect(mkfifo(fixture.layout.incoming + "/pipe.json", 0o600) == 0)
        #expect(problemCode("pipe.json") == .notRegularFile)
        #expect(mkdir(fixture.layout.incoming + "/dir.json", 0o700) == 0)
        guard case .problem(let problem) = read("dir.json") else { Issue.record("read a directory"); return }
        #expect(problem.detail == "the file is a directory; spool files must be regular files")

        let socketPath = fixture.layout.incoming + "/sock.json"
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in socketPath.utf8.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)
        #expect(problemCode("sock.json") == .notRegularFile)
    }

    @Test("refuses a file over MaxFileSize without reading it")
    func tooLarge() {
        let path = fixture.drop("big.json", "")
        #expect(truncate(path, 100 * 1024 * 1024) == 0)  // sparse: 100 MiB without the disk space
        guard case .problem(let problem) = read("big.json") else { Issue.record("read a huge file"); return }
        #expect(problem == OrderFileProblem(.tooLarge, "the file is 104857600 bytes; MaxFileSize= allows 1024 bytes"))
    }

    @Test("a vanished name is not a problem")
    func vanished() {
        #expect(read("nothing-here.json") == .vanished)
    }
}
