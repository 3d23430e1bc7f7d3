import Foundation
import Glibc
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileSpool

@Suite("Spool lock")
struct SpoolLockTests {
    let fixture = SpoolFixture()

    @Test("one holder per spool; the second is told the holder's pid and the spool")
    func second() throws {
        let held = try SpoolLock.acquire(fixture.layout)
        // flock locks belong to the open file: a second open in this process conflicts too.
        do {
            _ = try SpoolLock.acquire(fixture.layout)
            Issue.record("a second lock was granted")
        } catch {
            #expect(error.description == "reconciled (pid \(getpid())) holds the spool lock \(fixture.layout.lock); only one daemon may use a spool (is another configured with [Spool] Directory=\(fixture.layout.root)?)")
        }
        _ = held
    }

    @Test("a lock file someone else left in the spool root is refused, not trusted")
    func foreignFile() throws {
        guard geteuid() == 0 else { return }  // needs to chown
        fixture.directory.write("spool/reconciled.lock", "")
        #expect(chown(fixture.layout.lock, 65534, 65534) == 0)
        #expect(throws: SpoolLock.Refused.self) { _ = try SpoolLock.acquire(fixture.layout) }
        do { _ = try SpoolLock.acquire(fixture.layout) } catch { #expect(error.description.contains("belongs to uid 65534")) }
    }
}
