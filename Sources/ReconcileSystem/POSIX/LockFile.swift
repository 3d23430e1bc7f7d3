import CLinux
import Glibc

/// An exclusive lock on a file (`flock`), held for the life of the process: one daemon per
/// database (DESIGN §7).
///
/// The lock file holds the owner's pid for the error message of the next one to try. It is
/// never deleted: deleting a lock file races with the next owner.
public final class LockFile: Sendable {
    public let path: String
    private let descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Why the lock could not be taken.
    public enum Failure: Error, Sendable, Hashable, CustomStringConvertible {
        /// Another process holds it.
        case held(path: String, ownerPID: Int32?)
        case system(SystemError)

        public var description: String {
            switch self {
            case .held(let path, let owner):
                let who = owner.map { "another reconciled (pid \($0))" } ?? "another process"
                return "\(who) holds the lock \(path); only one daemon may use a database"
            case .system(let error):
                return "cannot take the lock: \(error)"
            }
        }
    }

    /// Takes the lock without waiting.
    public static func acquire(_ path: String) throws(Failure) -> LockFile {
        let descriptor = reconcile_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o640)
        guard descriptor >= 0 else { throw .system(.current("open", path: path)) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let failure = errno
            defer { close(descriptor) }
            if failure == EWOULDBLOCK {
                let text = (try? FileSystem.read(descriptor, limit: 64)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
                let pid = text.flatMap { Int32($0.trimmingCharacters(in: " \n")) }
                throw .held(path: path, ownerPID: pid)
            }
            throw .system(SystemError(errno: failure, operation: "flock", path: path))
        }
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        }
        return LockFile(path: path, descriptor: descriptor)
    }
}

extension String {
    func trimmingCharacters(in characters: String) -> String {
        var result = Substring(self)
        while let first = result.first, characters.contains(first) { result.removeFirst() }
        while let last = result.last, characters.contains(last) { result.removeLast() }
        return String(result)
    }
}
