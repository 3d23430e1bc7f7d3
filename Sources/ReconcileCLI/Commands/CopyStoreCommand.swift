import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcilePostgreSQL
import ReconcileSystem

/// `reconcilectl copy-store postgresql://…`: moves this configuration's SQLite store into an
/// empty PostgreSQL database (DESIGN §7), with the daemon stopped, and checks the counts.
enum CopyStoreCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "copy-store", abstract: "Copy the SQLite store into an empty PostgreSQL database.",
            usage: "copy-store <postgresql-uri>",
            discussion: """
                The daemon must be stopped (its store's lock is taken). The database is migrated
                to this version's schema, must hold no order yet, and receives every order with
                its raw file, history, attempts and claimed transactions, and the outbox's
                follow-up requests, in one transaction; the rows of each table are then counted
                on both sides. The password comes from
                PGPASSWORD or ~/.pgpass (libpq's own ways), never the command line. Then set
                [State] Database= to the URI and start the daemons.
                """,
            arguments: [ArgumentSpec(name: "postgresql-uri", help: "postgresql://user@host/database?sslmode=…")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let uri = try ArgumentChecks.onePositional(arguments, name: "postgresql-uri", command: "copy-store")
        guard StateDatabase.isPostgreSQL(uri) else {
            // A path is shown as given; anything that could hold a password, as libpq reads it.
            let shown = uri.contains(where: { "=@:".contains($0) }) ? PostgreSQLConnectionOptions(uri: uri).redactedURI : uri
            throw CommandLineError.usage("'\(shown)' is not a PostgreSQL URI (postgresql://…)", command: "copy-store")
        }
        let environment = try CommandEnvironment(context)
        guard !environment.isShared else {
            throw CommandLineError.failure("this configuration's store is PostgreSQL already; copy-store copies an SQLite store")
        }
        let path = environment.databasePath
        guard FileManager.default.fileExists(atPath: path) else { throw CommandLineError.failure("there is no store at \(path)") }
        // The daemon stopped: its lock is free, and stays ours until the copy is done.
        let lock: LockFile
        do {
            lock = try LockFile.acquire(path + ".lock", program: "reconcilectl", patience: .seconds(2))
        } catch {
            throw CommandLineError.failure("\(error); stop reconciled before copying its store")
        }
        defer { withExtendedLifetime(lock) {} }
        let source: SQLiteOrderStore
        do {
            source = try SQLiteOrderStore(path: path, mode: .readOnly)
        } catch {
            throw CommandLineError.failure(String(describing: error))
        }
        defer { source.close() }
        let options = PostgreSQLConnectionOptions(uri: uri, applicationName: "reconcilectl copy-store", statementTimeoutSeconds: 0)
        let target: PostgreSQLOrderStore
        do {
            target = try PostgreSQLOrderStore(options: options, node: "reconcilectl")
        } catch {
            throw CommandLineError.failure("cannot open \(options.redactedURI): \(error)")
        }
        defer { target.close() }
        do {
            // Progress on a terminal only: a script gets the summary line alone.
            var line: ProgressLine?
            let counts = try StoreCopy.copy(from: source, to: target, rows: { done, total in
                if line == nil { line = ProgressLine(label: "copy-store", total: total, output: context.output, now: context.now) }
                line?.update(done: done)
            })
            line?.finish()
            let summary = StoreCopy.tables.map { "\(Number.grouped(counts.rows[$0] ?? 0)) \($0)" }.joined(separator: ", ")
            context.output.out("copied \(path) into \(options.redactedURI): \(summary); counts checked on both sides\n")
            return ExitStatus.success
        } catch {
            throw CommandLineError.failure("copy-store failed: \(error)")
        }
    }
}
