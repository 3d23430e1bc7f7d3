import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool layout")
struct SpoolLayoutTests {
    @Test("creates the directories with the DESIGN modes: 3770 (setgid and sticky) but rejected/ 0750, whatever the umask")
    func modes() throws {
        let directory = TemporaryDirectory(prefix: "layout")
        let layout = SpoolLayout(root: directory.file("spool"))
        let old = umask(0o077)
        defer { umask(old) }
        #expect(try layout.prepare().count == 4)
        for (path, mode) in [(layout.root, 0o3770), (layout.temporary, 0o3770), (layout.incoming, 0o3770), (layout.rejected, 0o750)] {
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

    @Test("a symlink in a subdirectory's place is left alone, never followed or replaced")
    func symlinkLeftAlone() throws {
        let directory = TemporaryDirectory(prefix: "layout")
        let layout = SpoolLayout(root: directory.file("spool"))
        let elsewhere = directory.file("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        #expect(chmod(elsewhere, 0o755) == 0)
        try FileManager.default.createDirectory(atPath: layout.root, withIntermediateDirectories: true)
        #expect(symlink(elsewhere, layout.incoming) == 0)
        #expect(try layout.prepare() == [layout.temporary, layout.rejected])
        var info = stat()
        #expect(lstat(layout.incoming, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)
        #expect(stat(elsewhere, &info) == 0 && info.st_mode & 0o7777 == 0o755, "the target's mode was changed")
    }
}
