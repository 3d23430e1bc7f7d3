import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem

/// `reconcilectl restore FILE`: with the daemon stopped, checks a backup, sets the store and its
/// write-ahead log aside together, and installs the backup in its place (DESIGN §10).
enum RestoreCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "restore", abstract: "Replace the store with a backup (reconciled stopped).",
            usage: "restore <file>",
            discussion: """
                Refused while reconciled runs (it holds the store's lock): stop it first. Checks
                the backup (PRAGMA integrity_check; a reconcile store whose schema this version
                knows), sets the store and its -wal and -shm aside together as
                <database>.replaced-<time> (never deleted: the pair still opens as the store it
                was), and installs a copy of the backup with the store's owner and mode 0640.
                Orders taken in after the backup was made are not in it: see docs/operating.md, "Restoring
                the store".
                """,
            arguments: [ArgumentSpec(name: "file", help: "The backup, as `reconcilectl backup` writes it.")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let backup = ConfigurationLoader.absolute(try ArgumentChecks.onePositional(arguments, name: "file", command: "restore"))
        let environment = try CommandEnvironment(context)
        if environment.isShared { _ = try environment.sqliteStore(verb: "restore") }
        let database = environment.databasePath
        let directory = FileSystem.parentDirectory(of: database)

        // Who may: root, or the store's owner (the directory's, when there is no store yet).
        var info = stat()
        let ownerPath = stat(database, &info) == 0 ? database : directory
        guard stat(ownerPath, &info) == 0 else {
            throw CommandLineError.failure("the state directory \(directory) does not exist; nothing to restore into")
        }
        let owner = (uid: info.st_uid, gid: info.st_gid)
        if geteuid() != 0 && owner.uid != geteuid() {
            let name = UserDatabase.userName(of: owner.uid) ?? "uid \(owner.uid)"
            let command = (["reconcilectl"] + CommandLine.arguments.dropFirst()).map(OperatorCommand.shellQuoted).joined(separator: " ")
            throw CommandLineError.failure("\(ownerPath) belongs to \(name); run as root or as its owner:\n  sudo -u \(name) \(command)")
        }

        // Never under a running daemon: its lock says whether one runs (and keeps one from
        // starting until the restore is done).
        let lockPath = database + ".lock"
        let lockExisted = FileSystem.exists(lockPath)
        let lock: LockFile
        do {
            lock = try LockFile.acquire(lockPath, program: "reconcilectl", patience: .seconds(2))
        } catch {
            if case .held(_, let pid, let holder) = error, holder == "reconciled" || holder == nil {
                let who = "reconciled" + (pid.map { " (pid \($0))" } ?? "")
                throw CommandLineError.failure(
                    "\(who) is running on \(database); stop it first (systemctl stop reconciled), then run restore again")
            }
            throw CommandLineError.failure(error.description)
        }
        defer { withExtendedLifetime(lock) {} }
        if !lockExisted && geteuid() == 0 { chown(lockPath, owner.uid, owner.gid) }  // the daemon's, not root's
        if ControlSocketServer.isListening(environment.socketPath) {
            throw CommandLineError.failure(
                "reconciled answers on \(environment.socketPath); stop it first (systemctl stop reconciled), then run restore again")
        }

        let outcome: StoreRestore.Outcome
        // On a terminal: the copy's size against the backup's as it is written.
        let total = max(1, ProgressLine.fileSize(backup))
        var line = ProgressLine(label: "restore, bytes", total: total, output: context.output, now: context.now)
        do {
            outcome = try StoreRestore.install(
                backup: backup, database: database, owner: geteuid() == 0 ? (owner.uid, owner.gid) : nil, now: context.now(),
                progress: { written in line.update(done: min(ProgressLine.fileSize(written), total - 1)) })
            line.update(done: total)
            line.finish()
        } catch {
            line.finish()
            throw CommandLineError.failure(error.description)
        }
        let checked = outcome.backup
        let output = context.output
        output.out("checked \(backup): integrity ok, schema version \(checked.schemaVersion), \(Plural.count(checked.orders, "order"))\n")
        if outcome.setAside.isEmpty {
            output.out("there was no store at \(database); nothing set aside\n")
        } else {
            output.out("set aside: \(outcome.setAside.joined(separator: ", "))\n")
        }
        output.out("restored \(database) from \(backup) (\(Plural.count(checked.orders, "order")))\n")
        let latest = SchemaMigrator().latestVersion
        if checked.schemaVersion < latest {
            output.out(
                "reconciled migrates it from schema version \(checked.schemaVersion) to \(latest) when it starts (after copying it to \(database).pre-\(checked.schemaVersion + 1))\n")
        }
        output.out("start reconciled to use it: systemctl start reconciled\n")
        return ExitStatus.success
    }
}
