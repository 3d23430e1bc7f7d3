import Foundation
import Glibc
import ReconcileCore
import ReconcileCredentials
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcilePostgreSQL
import ReconcileSystem

/// What most verbs need before they start: the configuration, the store, the daemon.
struct CommandEnvironment {
    let context: CommandContext
    let configuration: Configuration

    /// Loads the configuration the daemon uses; a bad one ends the command with exit 78.
    init(_ context: CommandContext) throws {
        self.context = context
        do {
            configuration = try ConfigurationLoader.load(path: context.effectiveConfigPath)
        } catch {
            for problem in error.problems { context.output.err("\(problem)\n") }
            throw CommandLineError.failure(
                "\(Plural.count(error.problems.count, "problem")) in the configuration", status: ExitStatus.configuration)
        }
    }

    var databasePath: String { configuration.state.database }
    var socketPath: String { configuration.control.socket }

    /// Whether the store is shared (PostgreSQL).
    var isShared: Bool { configuration.state.isShared }

    /// The store the configuration names. The shared store's password comes from `PasswordFile=`,
    /// from `PasswordCredential=` when `$CREDENTIALS_DIRECTORY` is set, else as libpq finds it
    /// (`PGPASSWORD`, `~/.pgpass`).
    func backend() throws -> StoreBackend {
        do {
            let password = try ConfiguredCredentials.storePassword(configuration, environment: context.environment, credentials: .optional)
            return StoreBackend(configuration, password: password, applicationName: "reconcilectl")
        } catch {
            throw CommandLineError.failure(error.description)
        }
    }

    /// The store, read-only for SQLite (read verbs never need more); the shared store as it is.
    func readStore() throws -> any OperableOrderStore {
        switch try backend() {
        case .sqlite(let path): try openSQLite(path)
        case .postgresql(let options): try openShared(options)
        }
    }

    /// The SQLite store, read-only; verbs that only SQLite has (`backup`, `restore`) say so for
    /// a shared store.
    func sqliteStore(verb: String) throws -> SQLiteOrderStore {
        // No password needed to say a shared store is not for this verb.
        switch StoreBackend(configuration, password: nil) {
        case .sqlite(let path):
            return try openSQLite(path)
        case .postgresql(let options):
            throw CommandLineError.failure(
                "\(verb) works on an SQLite store only; this configuration's store is PostgreSQL (\(options.redactedURI)): use PostgreSQL's own tools (pg_dump, a base backup)")
        }
    }

    /// The shared store, from any host (DESIGN §7); never migrated from here.
    func sharedStore() throws -> PostgreSQLOrderStore {
        switch try backend() {
        case .sqlite(let path): throw CommandLineError.failure("the store \(path) is not a shared (PostgreSQL) store")
        case .postgresql(let options): try openShared(options)
        }
    }

    private func openSQLite(_ path: String) throws -> SQLiteOrderStore {
        if let problem = PermissionProblem.explain(path, what: "the store") { throw CommandLineError.failure(problem) }
        do {
            return try SQLiteOrderStore(path: path, mode: .readOnly)
        } catch {
            throw CommandLineError.failure(String(describing: error))
        }
    }

    private func openShared(_ options: PostgreSQLConnectionOptions) throws -> PostgreSQLOrderStore {
        do {
            return try PostgreSQLOrderStore(options: options, node: "reconcilectl", migrate: false)
        } catch {
            throw CommandLineError.failure("cannot open the store \(options.redactedURI): \(error)")
        }
    }

    /// The operator recorded in the history: `SUDO_USER` when run through sudo, else the user.
    var operatorName: String {
        if let sudoUser = context.environment["SUDO_USER"], !sudoUser.isEmpty { return sudoUser }
        return UserDatabase.currentUserName
    }

    /// Sends a request to the daemon; `nil` when it is not running.
    ///
    /// - Throws: ``DaemonBusy`` when it runs but cannot serve the request now (every connection
    ///   taken, or no answer in time); `CommandLineError` for any other failure.
    func askDaemon(_ request: ControlRequest, timeout: Duration = .seconds(30)) throws -> JSONObject? {
        var request = request
        // The daemon honours it only from root and from its own user (`sudo -u reconciled`).
        if let sudoUser = context.environment["SUDO_USER"], !sudoUser.isEmpty { request.onBehalfOf = sudoUser }
        let answer: String
        do {
            answer = try ControlSocketClient.request(request.line, path: socketPath, timeout: timeout)
        } catch {
            if case .notRunning = error { return nil }
            if case .permissionDenied = error, let problem = PermissionProblem.explain(socketPath, what: "reconciled's control socket", write: true) {
                throw CommandLineError.failure(problem)
            }
            if case .timedOut = error { throw DaemonBusy(reason: "it did not answer within \(TimeSpan.format(timeout))") }
            throw CommandLineError.failure(error.description)
        }
        guard case .object(let object)? = try? JSONParser().parse(answer) else {
            throw CommandLineError.failure("reconciled answered something that is not JSON")
        }
        guard object["ok"]?.boolValue == true else {
            let message = object["error"]?.stringValue ?? "reconciled refused the request"
            if object["busy"]?.boolValue == true { throw DaemonBusy(reason: message) }
            throw CommandLineError.failure(message)
        }
        return object
    }
}

/// The daemon runs (something answers on its socket) but cannot serve the request now.
struct DaemonBusy: Error, CustomStringConvertible {
    var reason: String
    var description: String { "reconciled is running but busy: \(reason)" }
}
