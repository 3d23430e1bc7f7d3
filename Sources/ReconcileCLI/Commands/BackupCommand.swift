import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem

/// `reconcilectl backup FILE`: a consistent copy of the store (`VACUUM INTO`), safe while the
/// daemon runs; the count printed is the copy's.
enum BackupCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "backup", abstract: "Write a consistent copy of the store to a new file.",
            usage: "backup <file>",
            discussion: "Safe while reconciled runs. The file must not exist.",
            arguments: [ArgumentSpec(name: "file", help: "Where to write the copy.")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let path = try ArgumentChecks.onePositional(arguments, name: "file", command: "backup")
        let target = ConfigurationLoader.absolute(path)
        let environment = try CommandEnvironment(context)
        let store = try environment.sqliteStore(verb: "backup")
        // The copy holds every receipt: made here, empty, 0600 and never over an existing file
        // (SQLite's VACUUM INTO fills an empty file; left to itself it would follow the umask).
        let created = open(target, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard created >= 0 else {
            if errno == EEXIST { throw CommandLineError.failure("\(target) exists; choose a new name") }
            throw CommandLineError.failure("cannot create \(target): \(String(cString: strerror(errno)))")
        }
        close(created)
        do {
            try store.backup(to: target)
            let descriptor = open(target, O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 {
                fsync(descriptor)
                close(descriptor)
            }
            try FileSystem.syncDirectory(FileSystem.parentDirectory(of: target))
        } catch {
            unlink(target)
            throw CommandLineError.failure("cannot back up to \(target): \(error)")
        }
        // The copy's own count: the daemon may have taken orders in since the store was opened.
        let orders: Int
        do {
            orders = Int(try SQLiteConnection(path: target, mode: .readOnly).scalar("SELECT count(*) FROM orders") ?? 0)
        } catch {
            throw CommandLineError.failure("wrote \(target), but cannot read it back: \(error)")
        }
        var info = stat()
        let size = stat(target, &info) == 0 ? Int(info.st_size) : 0
        context.output.out("backed up \(Plural.count(orders, "order")) to \(target) (\(Number.grouped(size)) bytes)\n")
        return ExitStatus.success
    }
}
