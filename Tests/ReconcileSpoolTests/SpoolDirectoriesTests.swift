import Foundation
import Glibc
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool directories (held open safely)")
struct SpoolDirectoriesTests {
    let fixture = SpoolFixture()

    @Test("a subdirectory is opened once and kept while its path names it")
    func held() throws {
        let directories = SpoolDirectories(layout: fixture.layout)
        let first = try directories.open(.incoming)
        let again = try directories.open(.incoming)
        #expect(!first.reopened && !again.reopened)
        #expect(first.descriptor == again.descriptor)
    }

    @Test("replaced: opened afresh; a symlink: refused with its name, whatever it points to")
    func replacedAndSymlink() throws {
        let directories = SpoolDirectories(layout: fixture.layout)
        _ = try directories.open(.incoming)
        let incoming = fixture.layout.incoming
        #expect(rename(incoming, incoming + ".old") == 0)
        #expect(mkdir(incoming, 0o770) == 0)
        #expect(try directories.open(.incoming).reopened)

        #expect(rename(incoming, incoming + ".new") == 0)
        #expect(symlink(incoming + ".new", incoming) == 0)
        #expect(throws: SpoolDirectoryProblem.symlink(incoming)) { try directories.open(.incoming) }
        #expect(SpoolDirectoryProblem.symlink(incoming).description.hasPrefix("\(incoming) is a symbolic link"))

        #expect(unlink(incoming) == 0)
        #expect(throws: SpoolDirectoryProblem.opening(incoming, errno: ENOENT)) { try directories.open(.incoming) }
        fixture.directory.write("spool/incoming", "a file")
        #expect(throws: SpoolDirectoryProblem.notDirectory(incoming)) { try directories.open(.incoming) }
    }

    @Test("the spool root moved away and made again: everything reopened")
    func rootReplaced() throws {
        let directories = SpoolDirectories(layout: fixture.layout)
        let before = try directories.open(.rejected)
        #expect(rename(fixture.layout.root, fixture.layout.root + ".old") == 0)
        try SpoolLayout(root: fixture.layout.root).prepare()
        let after = try directories.open(.rejected)
        #expect(after.reopened || after.descriptor != before.descriptor)
        var held = stat()
        var path = stat()
        #expect(fstat(after.descriptor, &held) == 0 && stat(fixture.layout.rejected, &path) == 0)
        #expect(held.st_ino == path.st_ino)
    }
}
