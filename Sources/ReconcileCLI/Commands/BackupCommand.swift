import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem

/// `reconcilectl backup FILE | --into DIR [--keep N]`: a consistent copy of the store (`VACUUM
/// INTO`), safe while the daemon runs; the count printed is the copy's. `--into` names the copy
/// by the time (`orders-20261205T010000Z.db`) and, with `--keep`, removes the oldest such
/// copies beyond N — what `reconciled-backup.timer` runs every day.
enum BackupCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "backup", abstract: "Write a consistent copy of the store to a new file.",
            usage: "backup (<file> | --into <dir> [--keep <n>])",
            discussion: """
                Safe while reconciled runs. The file must not exist. --into writes
                DIR/orders-<UTC time>.db instead and, with --keep N, then removes the oldest
                copies of that name beyond the N newest (never another file).
                """,
            arguments: [ArgumentSpec(name: "file", help: "Where to write the copy.")],
            options: [
                OptionSpec(long: "into", short: nil, valueName: "dir", help: "Write DIR/orders-<UTC time>.db instead of a named file."),
                OptionSpec(long: "keep", short: nil, valueName: "n", help: "With --into: keep only the N newest copies there (1 to 10000)."),
            ],
            run: run)
    }

    /// The name `--into` gives a copy: sorts by time.
    static func copyName(at time: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return "orders-\(formatter.string(from: time)).db"
    }

    /// Copies `--into` made (and only those), oldest first.
    static func copies(in directory: String) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.wholeMatch(of: /orders-\d{8}T\d{6}Z\.db/) != nil }.sorted()
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let directory = arguments.value("into")
        let keep = try arguments.value("keep").map { text -> Int in
            guard let count = Int(text), (1...10_000).contains(count) else {
                throw CommandLineError.usage("Invalid value '\(text)' for '--keep <n>'; use a number from 1 to 10000", command: "backup")
            }
            return count
        }
        if keep != nil && directory == nil { throw CommandLineError.usage("'--keep' goes with '--into'", command: "backup") }
        let target: String
        if let directory {
            try ArgumentChecks.noPositionals(arguments, command: "backup")
            target = ConfigurationLoader.absolute(directory) + "/" + copyName(at: context.now())
        } else {
            target = ConfigurationLoader.absolute(try ArgumentChecks.onePositional(arguments, name: "file", command: "backup"))
        }
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
        // On a terminal: the copy's size against the store's as it is written.
        let total = max(1, ProgressLine.fileSize(environment.databasePath))
        var line = ProgressLine(label: "backup, bytes", total: total, output: context.output, now: context.now)
        do {
            try store.backup(to: target) { line.update(done: min(ProgressLine.fileSize(target), total - 1)) }
            line.update(done: total)
            line.finish()
            let descriptor = open(target, O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 {
                fsync(descriptor)
                close(descriptor)
            }
            try FileSystem.syncDirectory(FileSystem.parentDirectory(of: target))
        } catch {
            line.finish()
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
        let size = ProgressLine.fileSize(target)
        context.output.out("backed up \(Plural.count(orders, "order")) to \(target) (\(Number.grouped(size)) bytes)\n")
        if let directory, let keep {
            let folder = ConfigurationLoader.absolute(directory)
            for name in copies(in: folder).dropLast(keep) {
                if unlink(folder + "/" + name) == 0 {
                    context.output.out("removed the older copy \(folder)/\(name)\n")
                } else {
                    context.output.err("cannot remove the older copy \(folder)/\(name): \(String(cString: strerror(errno)))\n")
                }
            }
        }
        return ExitStatus.success
    }
}
