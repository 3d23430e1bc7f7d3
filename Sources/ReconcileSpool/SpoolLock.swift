import CLinux
import Glibc
import ReconcileSystem

/// One daemon per spool (DESIGN §3): `reconciled.lock` in the spool root, held (`flock`) for
/// the daemon's life with the shared ``LockFile``. A second daemon configured with the same
/// `[Spool] Directory=` — whatever its store — is refused, with the holder's pid.
public enum SpoolLock {
    /// Why the lock was not taken: one line for stderr and `STATUS=`.
    public struct Refused: Error, Sendable, CustomStringConvertible {
        public var description: String
        public var errno: Int32?
    }

    /// Takes the spool's lock.
    ///
    /// The spool root is writable by the producers' group, so the lock file must also belong to
    /// this process's user (or root): one a producer left there is refused, not trusted.
    public static func acquire(_ layout: SpoolLayout, program: String = "reconciled") throws(Refused) -> LockFile {
        let lock: LockFile
        do {
            lock = try LockFile.acquire(layout.lock, program: program)
        } catch {
            switch error {
            case .held(let path, let pid, let owner):
                let who = [owner ?? "another process", pid.map { "(pid \($0))" }].compactMap { $0 }.joined(separator: " ")
                throw Refused(
                    description: "\(who) holds the spool lock \(path); only one daemon may use a spool (is another configured with [Spool] Directory=\(layout.root)?)")
            case .system(let failure):
                throw Refused(description: "cannot take the spool lock: \(failure)", errno: failure.errno)
            }
        }
        var info = stat()
        guard lstat(layout.lock, &info) == 0 else {
            throw Refused(description: "cannot take the spool lock: \(SystemError.current("stat", path: layout.lock))", errno: Glibc.errno)
        }
        guard info.st_uid == geteuid() || info.st_uid == 0 else {
            throw Refused(
                description: "the spool lock \(layout.lock) belongs to uid \(info.st_uid), not to this daemon's user (uid \(geteuid())) or root; remove it")
        }
        return lock
    }
}
