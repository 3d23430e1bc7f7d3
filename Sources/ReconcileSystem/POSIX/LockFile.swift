import CLinux
import Glibc

/// An exclusive lock on a file (`flock`), held for the life of the process: one daemon per
/// database (DESIGN §7). `reconcilectl` takes the same lock for the moment it changes a store
/// that no daemon runs on.
///
/// The lock file holds the owner's pid and program name (`812 reconciled`) for the error message
/// of the next one to try. It is never deleted: deleting a lock file races with the next owner.
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
        /// Another process holds it: its pid and program, as it wrote them.
        case held(path: String, ownerPID: Int32?, owner: String?)
        case system(SystemError)

        public var description: String {
            switch self {
            case .held(let path, let pid, let owner):
                let who = [owner ?? "another process", pid.map { "(pid \($0))" }].compactMap { $0 }.joined(separator: " ")
                if owner == "reconcilectl" {
                    return "\(who) is changing the store and holds its lock \(path); try again in a moment"
                }
                return "\(who) holds the lock \(path); only one daemon may use a database"
            case .system(let error):
                return "cannot take the lock: \(error)"
            }
        }
    }

    /// Takes the lock, trying again for up to `patience` while another process holds it (a
    /// `reconcilectl` holds it for milliseconds); writes `program` beside this process's pid.
    public static func acquire(_ path: String, program: String = "reconciled", patience: Duration = .zero) throws(Failure) -> LockFile {
        try acquire(path, program: program, patience: patience, beforeWaiting: {})
    }

    /// ``acquire(_:program:patience:)``, calling `beforeWaiting` each time the lock was held and
    /// it waits to try again (a test lets go of the lock there, instead of after a sleep).
    package static func acquire(
        _ path: String, program: String = "reconciled", patience: Duration, beforeWaiting: () -> Void
    ) throws(Failure) -> LockFile {
        let deadline = ContinuousClock.now + patience
        while true {
            do {
                return try attempt(path, program: program)
            } catch {
                guard case .held = error, ContinuousClock.now < deadline else { throw error }
                beforeWaiting()
                usleep(50_000)
            }
        }
    }

    private static func attempt(_ path: String, program: String) throws(Failure) -> LockFile {
        let descriptor = reconcile_openat(AT_FDCWD, path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o640)
        guard descriptor >= 0 else { throw .system(.current("open", path: path)) }
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let failure = errno
            defer { close(descriptor) }
            if failure == EWOULDBLOCK {
                let text = (try? FileSystem.read(descriptor, limit: 128)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) } ?? ""
                let words = text.trimmingCharacters(in: " \n").split(separator: " ", maxSplits: 1)
                let pid = words.first.flatMap { Int32($0) }
                let owner = words.count > 1 && words[1].allSatisfy({ $0.isLetter || $0 == "-" }) ? String(words[1]) : nil
                throw .held(path: path, ownerPID: pid, owner: owner)
            }
            throw .system(SystemError(errno: failure, operation: "flock", path: path))
        }
        let contents = Array("\(getpid()) \(program)\n".utf8)
        if ftruncate(descriptor, 0) == 0 {
            _ = contents.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
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
