import Foundation
import CLinux
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileSpool
import ReconcileSystem

/// `reconcilectl submit FILE|-`: validates an order exactly as the daemon will and places it in
/// the spool the safe way (write in `tmp/`, fsync, rename into `incoming/` without replacing
/// anything, fsync the directory), under a name the daemon always reads, readable by the daemon
/// whatever the caller's umask.
enum SubmitCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "submit", abstract: "Validate an order file and place it in the spool.",
            usage: "submit <file>",
            discussion: "Use - to read the order from standard input. Nothing is written when the order is not valid.",
            arguments: [ArgumentSpec(name: "file", help: "The order file (UTF-8 JSON), or - for standard input.")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let source = try ArgumentChecks.onePositional(arguments, name: "file", command: "submit")
        let environment = try CommandEnvironment(context)
        let limit = environment.configuration.spool.maxFileSize
        let bytes: [UInt8]
        if source == "-" {
            let read: [UInt8]?
            do {
                read = try FileSystem.read(STDIN_FILENO, limit: limit, path: "standard input")
            } catch {
                throw CommandLineError.failure("cannot read the order: \(error); nothing was submitted")
            }
            guard let read else {
                throw CommandLineError.failure("standard input is larger than MaxFileSize= (\(limit) bytes); nothing was submitted")
            }
            bytes = read
        } else {
            do {
                bytes = try FileSystem.readFile(source, limit: limit)
            } catch {
                throw CommandLineError.failure(error.errno == EFBIG ? "\(source) is larger than MaxFileSize= (\(limit) bytes)" : error.description)
            }
        }
        let submission: OrderSubmission
        do {
            submission = try OrderFileParser().parse(bytes)
        } catch {
            throw CommandLineError.failure("\(source == "-" ? "standard input" : source): \(error.detail) (\(error.code.rawValue)); nothing was submitted")
        }
        let layout = SpoolLayout(root: environment.configuration.spool.directory)
        let name = fileName(orderID: submission.orderID, now: context.now())
        let target: String
        do {
            target = try place(bytes, as: name, in: layout)
        } catch {
            throw CommandLineError.failure("cannot place the order in the spool: \(error); nothing was submitted")
        }
        context.output.out("submitted order \(submission.orderID) as \(target)\n")
        return ExitStatus.success
    }

    /// The mode of a submitted file, whatever the caller's umask: the daemon reads it through
    /// the producers' group.
    static let fileMode: mode_t = 0o640

    /// `order-<order_id>.<ms>.<random>.json`: the fixed prefix keeps any order id (`.hidden`
    /// is a valid one) from making a name the daemon ignores (a leading `.`, a `.tmp` ending),
    /// and the time keeps a later submission of an order after an earlier one in its reading
    /// order.
    static func fileName(orderID: String, now: Date) -> String {
        "order-\(orderID).\(Int64(now.timeIntervalSince1970 * 1000)).\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).json"
    }

    /// Writes `bytes` as `tmp/NAME` (mode ``fileMode``, fsynced), renames it to `incoming/NAME`
    /// without replacing anything and fsyncs `incoming/`. Both directories are opened relative
    /// to the spool root without following links (``SpoolDirectories``).
    ///
    /// - Returns: the path in `incoming/`.
    static func place(_ bytes: [UInt8], as name: String, in layout: SpoolLayout) throws -> String {
        let directories = SpoolDirectories(layout: layout)
        let temporary = try directories.open(.temporary).descriptor
        let incoming = try directories.open(.incoming).descriptor
        let temporaryPath = layout.temporary + "/" + name
        let target = layout.incoming + "/" + name
        let descriptor = try retryingOnInterrupt("open", path: temporaryPath) {
            reconcile_openat(temporary, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, fileMode)
        }
        do {
            try FileSystem.writeAll(descriptor, bytes, path: temporaryPath)
            try retryingOnInterrupt("fchmod", path: temporaryPath) { fchmod(descriptor, fileMode) }
            try retryingOnInterrupt("fsync", path: temporaryPath) { fsync(descriptor) }
            close(descriptor)
        } catch {
            close(descriptor)
            unlinkat(temporary, name, 0)
            throw error
        }
        do {
            try retryingOnInterrupt("rename", path: target) { reconcile_rename_noreplace(temporary, name, incoming, name) }
        } catch {
            unlinkat(temporary, name, 0)
            throw error
        }
        try retryingOnInterrupt("fsync", path: layout.incoming) { fsync(incoming) }
        return target
    }
}
