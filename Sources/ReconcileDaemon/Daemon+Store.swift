import Foundation
import ReconcileCore
import ReconcileCredentials
import ReconcileEngine
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcilePostgreSQL
import ReconcileSystem
import Synchronization

/// The daemon's store, opened at start: the SQLite file under its lock, or a node of the shared
/// PostgreSQL store with the listener that wakes it when another node changes something.
extension Daemon {
    /// What ``openStore(_:configPath:environment:logger:willMigrate:)`` opened, with what only
    /// its engine has.
    enum OpenedStore {
        /// The SQLite store (its file is watched) under its lock: one daemon per SQLite store.
        case sqlite(SQLiteOrderStore, lock: LockFile)
        /// A node of the shared store, with the listener that wakes it when another node sends
        /// `NOTIFY`, through `wake` (set to the scheduler's nudge once it exists).
        case shared(PostgreSQLOrderStore, listener: PostgreSQLListener, wake: WakeBox)

        var store: any OperableOrderStore {
            switch self {
            case .sqlite(let store, _): store
            case .shared(let store, _, _): store
            }
        }

        /// Connects what the engine reports to the daemon: another node's `NOTIFY` nudges the
        /// scheduler; an SQLite file replaced under the daemon is a lost store.
        func connect(nudge: @escaping @Sendable () -> Void, storeLost: @escaping @Sendable (String) -> Void) {
            switch self {
            case .sqlite(let store, _): store.onLoss { error in storeLost(error.description) }
            case .shared(_, _, let wake): wake.set(nudge)
            }
        }

        /// How the scheduler takes part in a cluster: a node of the shared store, or alone.
        func coordinator(logger: Logger, clock: any DaemonClock) -> any ClusterCoordinator {
            switch self {
            case .sqlite: SoloCoordinator()
            case .shared(let store, _, _): SharedStoreCoordinator(store: store, logger: logger, clock: clock)
            }
        }

        /// Starts listening for other nodes (nothing for SQLite).
        func startListening() {
            if case .shared(_, let listener, _) = self { listener.start() }
        }

        /// Stops listening for other nodes (nothing for SQLite).
        func stopListening() {
            if case .shared(_, let listener, _) = self { listener.stop() }
        }
    }

    /// A wake-up handler set after its caller was made.
    final class WakeBox: Sendable {
        private let handler = Mutex<(@Sendable () -> Void)?>(nil)
        func set(_ wake: @escaping @Sendable () -> Void) { handler.withLock { $0 = wake } }
        func wake() { handler.withLock { $0 }?() }
    }

    /// Opens (and migrates) the configured store; the failure says which and why.
    static func openStore(
        _ configuration: Configuration, configPath: String, environment: [String: String], logger: Logger,
        willMigrate: @escaping @Sendable (String) -> Void
    ) throws(StartupFailure) -> OpenedStore {
        let password: String?
        do {
            password = try ConfiguredCredentials.storePassword(configuration, environment: environment)
        } catch {
            throw StartupFailure(status: ExitStatus.configuration, message: error.description)
        }
        switch StoreBackend(configuration, password: password) {
        case .postgresql(let options):
            // Several daemons share it: no lock file; each is a node with leases of its own.
            let node = Self.nodeName(configuration, configPath: configPath)
            let store: PostgreSQLOrderStore
            do {
                store = try PostgreSQLOrderStore(options: options, node: node, willMigrate: willMigrate)
            } catch {
                throw StartupFailure(status: ExitStatus.failure, message: "cannot open the store \(options.redactedURI): \(error)")
            }
            // Another daemon under this name would take the whole cluster's share and release
            // this one's leases: refused (a crashed earlier start of this one is not "another").
            let namesake: PostgreSQLNodeNamesake?
            do {
                namesake = try store.liveNamesake(heartbeatInterval: ClusterTiming(leaseTime: configuration.state.leaseTime).heartbeatInterval)
            } catch {
                store.close()
                throw StartupFailure(status: ExitStatus.failure, message: "cannot read the nodes of the store \(options.redactedURI): \(error)")
            }
            if let namesake {
                store.close()
                throw StartupFailure(status: ExitStatus.configuration, message: namesake.description)
            }
            let box = WakeBox()
            let listener = PostgreSQLListener(
                options: options, onNotify: { box.wake() },
                onTrouble: { [logger] why in logger.warning("\(why); other nodes' new orders are seen at the next heartbeat", [.reason: ReasonCode.unavailable.rawValue]) })
            logger.notice("node \(node) on the shared store \(options.redactedURI)")
            return .shared(store, listener: listener, wake: box)
        case .sqlite(let database):
            do {
                try FileSystem.makeDirectory(FileSystem.parentDirectory(of: database), mode: 0o750)
            } catch {
                throw StartupFailure(status: ExitStatus.failure, message: "cannot create the state directory: \(error)", errno: error.errno)
            }
            let lock: LockFile
            do {
                // A reconcilectl changing the store while no daemon ran holds it for milliseconds.
                lock = try LockFile.acquire(database + ".lock", patience: .seconds(5))
            } catch {
                throw StartupFailure(status: ExitStatus.failure, message: error.description)
            }
            do {
                let opened = try SQLiteOrderStore(path: database, mode: .owner, willMigrate: willMigrate)
                return .sqlite(opened, lock: lock)
            } catch {
                throw StartupFailure(status: ExitStatus.failure, message: "cannot open the store \(database): \(error)")
            }
        }
    }

    /// `[Daemon] Node=`, or the host name, with `@` and the configuration's name when it is not
    /// `reconciled.conf` (the instance of `reconciled@.service`, which reads `/etc/reconciled/%i.conf`).
    static func nodeName(_ configuration: Configuration, configPath: String) -> String {
        if let node = configuration.daemon.node { return node }
        let host = ProcessInfo.processInfo.hostName.split(separator: ".").first.map(String.init) ?? "localhost"
        let file = (configPath as NSString).lastPathComponent
        let instance = file.hasSuffix(".conf") ? String(file.dropLast(5)) : file
        let name = instance == "reconciled" || instance.isEmpty ? host : "\(host)@\(instance)"
        return String(name.map { $0.isLetter || $0.isNumber || "._-@".contains($0) ? $0 : "_" }.prefix(100))
    }
}
