import Foundation
import Glibc
import ReconcileCore
import ReconcileSpool
import ReconcileSystem

/// `reconcilectl submit FILE|-`: validates an order exactly as the daemon will and places it in
/// the spool the safe way (write in `tmp/`, fsync, rename into `incoming/` without replacing
/// anything, fsync the directory).
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
        let name = "\(submission.orderID).\(Int64(context.now().timeIntervalSince1970 * 1000)).\(String(UInt32.random(in: 0...UInt32.max), radix: 36)).json"
        let temporary = layout.temporary + "/" + name
        let target = layout.incoming + "/" + name
        do {
            let descriptor = try retryingOnInterrupt("open", path: temporary) {
                open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o660)
            }
            do {
                try FileSystem.writeAll(descriptor, bytes, path: temporary)
                try retryingOnInterrupt("fsync", path: temporary) { fsync(descriptor) }
                close(descriptor)
            } catch {
                close(descriptor)
                unlink(temporary)
                throw error
            }
            do {
                try FileSystem.renameWithoutReplacing(temporary, to: target)
            } catch {
                unlink(temporary)
                throw error
            }
            try FileSystem.syncDirectory(layout.incoming)
        } catch {
            throw CommandLineError.failure("cannot place the order in the spool: \(error)")
        }
        context.output.out("submitted order \(submission.orderID) as \(target)\n")
        return ExitStatus.success
    }
}
