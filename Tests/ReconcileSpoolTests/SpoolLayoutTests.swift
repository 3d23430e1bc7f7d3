import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool layout")
struct SpoolLayoutTests {
    @Test("creates the directories with the DESIGN modes")
    func modes() throws {
        let directory = TemporaryDirectory(prefix: "layout")
        let layout = SpoolLayout(root: directory.file("spool"))
        #expect(try layout.prepare().count == 4)
        for (path, mode) in [(layout.root, 0o2770), (layout.temporary, 0o2770), (layout.incoming, 0o2770), (layout.rejected, 0o750)] {
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(Int(info.st_mode & 0o7777) == mode, "\(path)")
        }
        #expect(try layout.prepare().isEmpty)
    }

    @Test("names producers are still working on are skipped")
    func candidates() {
        #expect(SpoolLayout.isCandidate("A1001.json"))
        #expect(!SpoolLayout.isCandidate(".A1001.json"))
        #expect(!SpoolLayout.isCandidate("A1001.json.tmp"))
        #expect(!SpoolLayout.isCandidate(""))
    }
}
