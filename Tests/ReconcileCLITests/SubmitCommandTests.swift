import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileSpool

@Suite("reconcilectl submit: file names and modes")
struct SubmitCommandTests {
    @Test("no order id makes a name the daemon ignores: a fixed prefix, whatever the id", arguments: [".hidden", "..", "x.tmp", "A1", String(repeating: "Z", count: 128)])
    func names(orderID: String) throws {
        let name = SubmitCommand.fileName(orderID: orderID, now: CLIFixture.now)
        #expect(name.hasPrefix("order-\(orderID).1796023566000."))
        #expect(name.hasSuffix(".json"))
        #expect(SpoolFileName(name).isCandidate)
        #expect(name.utf8.count <= 255)
    }

    @Test("an order id starting with '.' is submitted under a name the daemon reads")
    func hiddenOrderID() throws {
        let fixture = try CLIFixture()
        let file = fixture.directory.write("hidden.json", OrderFixtures.orderJSON(".hidden"))
        let result = fixture.run(["submit", file])
        #expect(result.status == 0, "\(result.err)")
        let names = fixture.directory.list("spool/incoming")
        #expect(names.count == 1)
        #expect(names.allSatisfy { SpoolLayout.isCandidate($0) && $0.hasPrefix("order-.hidden.") }, "\(names)")
    }

    @Test("the file is mode 0640 whatever the umask was when it was created")
    func mode() throws {
        let fixture = try CLIFixture()
        let path = try SubmitCommand.place(Array("{}".utf8), as: "x.json", in: SpoolLayout(root: fixture.directory.file("spool")))
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o7777 == 0o640)
    }

    @Test("a symlink in incoming/'s place is refused, and nothing is left in tmp/")
    func symlinkedIncoming() throws {
        let fixture = try CLIFixture()
        let incoming = fixture.directory.file("spool/incoming")
        try FileManager.default.removeItem(atPath: incoming)
        let elsewhere = fixture.directory.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, incoming) == 0)
        let file = fixture.directory.write("a.json", OrderFixtures.orderJSON("A1"))
        let result = fixture.run(["submit", file])
        #expect(result.status == 1)
        #expect(result.err.hasPrefix("Error: cannot place the order in the spool: <dir>/spool/incoming is a symbolic link"), "\(result.err)")
        #expect(fixture.directory.list("elsewhere").isEmpty)
        #expect(fixture.directory.list("spool/tmp").isEmpty)
    }
}
