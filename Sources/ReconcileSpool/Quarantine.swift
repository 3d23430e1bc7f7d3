import CLinux
import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// Moves a spool file the daemon cannot accept from `incoming/` into `rejected/`, with
/// `TARGET.reason` beside it saying exactly what was wrong. The reason is written (and synced)
/// before the file moves, so a file is never in `rejected/` without its reason.
///
/// Both directories are given as descriptors (``SpoolDirectories``), and every name is bytes.
/// The name in `rejected/` (``quarantineName(for:)``) always fits, with its reason file and
/// that file's temporary name, in 255 bytes, whatever the original name was; the original is
/// kept, escaped, in the reason's `file:` line. Finding a free name costs the same however many
/// files of one name were rejected before: the name itself if it is free, else the name with a
/// random suffix.
public struct Quarantine: Sendable {
    /// Names up to this length are kept as they are.
    static let longestKeptName = 200
    /// A longer name is cut to this many bytes, then `~` and a hash of the whole name.
    static let cutLength = 160

    public init() {}

    /// Moves `name` from `incoming` to `rejected`.
    ///
    /// A reason without its file is what a crash between the two steps leaves; its name is
    /// reused (the reason is rewritten). Names in `rejected/` never end in `.reason`, so a
    /// reason file is never mistaken for a rejected file, nor the reverse.
    ///
    /// - Parameter syncing: whether to fsync `rejected/` once the file is in; a caller that
    ///   rejects many files does it once for all of them.
    /// - Returns: the name it has in `rejected/`.
    @discardableResult
    public func reject(
        _ name: SpoolFileName, from incoming: Int32, into rejected: Int32, problem: OrderFileProblem, orderID: String? = nil, now: Date,
        syncing: Bool = true
    ) throws(SystemError) -> SpoolFileName {
        let base = Self.quarantineName(for: name)
        let reason = Self.reasonText(name, problem: problem, orderID: orderID, now: now)
        var target = base
        var tries = 0
        while true {
            if tries > 0 || Self.exists(target, in: rejected) {
                // Taken: a random suffix, whose reason must be free too.
                repeat {
                    tries += 1
                    guard tries <= 16 else { throw SystemError(errno: EEXIST, operation: "rename", path: name.escaped) }
                    target = SpoolFileName(base.bytes + Array(".\(SpoolFileName.hex(UInt32.random(in: 0...UInt32.max), digits: 8))".utf8))
                } while Self.exists(target, in: rejected) || Self.exists(Self.reasonName(of: target), in: rejected)
            }
            try Self.writeReason(reason, as: Self.reasonName(of: target), in: rejected)
            let moved = name.withCString { source in
                target.withCString { destination in reconcile_rename_noreplace(incoming, source, rejected, destination) }
            }
            if moved == 0 { break }
            let failure = errno
            if failure == EINTR { continue }
            // The reason just written names a file that did not move: take it back.
            Self.reasonName(of: target).withCString { _ = unlinkat(rejected, $0, 0) }
            if failure == EEXIST {
                tries += 1
                continue
            }
            throw SystemError(errno: failure, operation: "rename", path: name.escaped)
        }
        if syncing { try retryingOnInterrupt("fsync", path: "rejected/") { fsync(rejected) } }
        return target
    }

    /// The name a rejected file gets (before a suffix, when it is taken): the original when it
    /// has at most 200 bytes and does not end in `.reason`; otherwise its first 160 bytes (cut
    /// back to a whole UTF-8 character), `~` and 16 hex digits of a hash of the whole name.
    public static func quarantineName(for name: SpoolFileName) -> SpoolFileName {
        if name.bytes.count <= longestKeptName && !name.bytes.ends(with: reasonSuffix) { return name }
        var cut = min(cutLength, name.bytes.count)
        // Not in the middle of a character: step back over continuation bytes and their lead.
        if cut < name.bytes.count, name.bytes[cut] & 0xC0 == 0x80 {
            var start = cut
            while start > 0, name.bytes[start - 1] & 0xC0 == 0x80 { start -= 1 }
            if start > 0, name.bytes[start - 1] >= 0xC0 { cut = start - 1 }
        }
        let hash = fnv1a(name.bytes)
        let digits = SpoolFileName.hex(UInt32(hash >> 32), digits: 8) + SpoolFileName.hex(UInt32(truncatingIfNeeded: hash), digits: 8)
        return SpoolFileName(Array(name.bytes[..<cut]) + Array("~\(digits)".utf8))
    }

    static let reasonSuffix = Array(".reason".utf8)

    public static func reasonName(of target: SpoolFileName) -> SpoolFileName {
        SpoolFileName(target.bytes + reasonSuffix)
    }

    /// FNV-1a, 64 bits: tells long names with the same beginning apart (not a security measure).
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    static func exists(_ name: SpoolFileName, in directory: Int32) -> Bool {
        var info = stat()
        return name.withCString { fstatat(directory, $0, &info, AT_SYMLINK_NOFOLLOW) } == 0
    }

    /// Writes a reason file the durable way: a temporary name (`.NAME.reason.<pid>.<n>.tmp`),
    /// fsync, rename over `name`.
    static func writeReason(_ bytes: [UInt8], as name: SpoolFileName, in directory: Int32) throws(SystemError) {
        let temporary = SpoolFileName(
            Array(".".utf8) + name.bytes + Array(".\(getpid()).\(SpoolFileName.hex(UInt32.random(in: 0...UInt32.max), digits: 8)).tmp".utf8))
        let shown = "rejected/\(temporary.escaped)"
        let descriptor = try retryingOnInterrupt("open", path: shown) {
            temporary.withCString { reconcile_openat(directory, $0, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o640) }
        }
        do {
            try FileSystem.writeAll(descriptor, bytes, path: shown)
            try retryingOnInterrupt("fchmod", path: shown) { fchmod(descriptor, 0o640) }
            try retryingOnInterrupt("fsync", path: shown) { fsync(descriptor) }
        } catch {
            close(descriptor)
            temporary.withCString { _ = unlinkat(directory, $0, 0) }
            throw error
        }
        close(descriptor)
        do {
            try retryingOnInterrupt("rename", path: "rejected/\(name.escaped)") {
                temporary.withCString { source in name.withCString { renameat(directory, source, directory, $0) } }
            }
        } catch {
            temporary.withCString { _ = unlinkat(directory, $0, 0) }
            throw error
        }
    }

    /// Removes what a crash in the middle of writing a reason leaves behind: the daemon's own
    /// temporary files (`.NAME.reason.<pid>.<n>.tmp`) in `rejected/`.
    ///
    /// - Returns: the names removed.
    @discardableResult
    public func removeLeftovers(in rejected: Int32) -> [SpoolFileName] {
        guard let names = try? FileSystem.listDirectoryEntries(descriptor: rejected, path: "rejected/") else { return [] }
        let leftovers = names.map(SpoolFileName.init).filter { name in
            name.bytes.first == UInt8(ascii: ".") && name.bytes.ends(with: SpoolFileName.temporarySuffix)
                && name.bytes.firstRange(of: Array(".reason.".utf8)) != nil
        }
        for name in leftovers { name.withCString { _ = unlinkat(rejected, $0, 0) } }
        return leftovers
    }

    /// ``removeLeftovers(in:)`` on the spool's `rejected/`, opened the safe way; nothing when it
    /// cannot be opened (the ingest says why when it needs it).
    @discardableResult
    public func removeLeftovers(in layout: SpoolLayout) -> [SpoolFileName] {
        let directories = SpoolDirectories(layout: layout)
        guard let rejected = try? directories.open(.rejected).descriptor else { return [] }
        return removeLeftovers(in: rejected)
    }

    /// The reason file: `key: value` lines, for people and for `grep`. The original name is on
    /// the `file:` line, escaped as in logs (``SpoolFileName/escaped``).
    static func reasonText(_ name: SpoolFileName, problem: OrderFileProblem, orderID: String?, now: Date) -> [UInt8] {
        var text = "file: \(name.escaped)\n"
        text += "rejected_at: \(RFC3339.format(now))\n"
        text += "reason: \(problem.code.rawValue)\n"
        if let orderID { text += "order_id: \(printable(orderID))\n" }
        text += "detail: \(printable(problem.detail))\n"
        return Array(text.utf8)
    }

    /// Text for one line of a reason file: control characters, line separators and bidi
    /// overrides escaped as in a name.
    static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: SpoolFileName.needsEscape) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if SpoolFileName.needsEscape(scalar) {
                result += SpoolFileName(Array(String(scalar).utf8)).escaped
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
