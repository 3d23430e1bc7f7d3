import Foundation
import ReconcileCore
import Synchronization
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// A fresh, empty database on the process's ``PostgreSQLTestServer`` (`CREATE DATABASE`), for one
/// test. Databases are not dropped: the whole cluster goes when the process exits.
final class PostgreSQLTestDatabase: Sendable {
    let server: PostgreSQLTestServer
    let name: String

    /// Creates the database (blocking: from tests, ``make()``).
    ///
    /// - Throws: why the server could not start, or the database could not be made.
    init() throws {
        server = try PostgreSQLTestServer.shared()
        name = "test_\(Self.counter.add(1, ordering: .relaxed).newValue)_\(UInt32.random(in: 0 ... .max))"
        try Self.administration.withLock { connection in
            if connection == nil {
                connection = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres"), applicationName: "reconcile-tests"))
            }
            // A name of our own making (letters, digits, underscores): CREATE DATABASE takes no parameters.
            try connection!.execute("CREATE DATABASE \(name)")
        }
    }

    /// Creates the database on a thread of its own: creations queue up (the server makes one at
    /// a time), and a test waiting its turn must not hold one of the few threads of Swift's
    /// cooperative pool, which the other tests running meanwhile need.
    static func make() async throws -> PostgreSQLTestDatabase {
        try await offPool { try PostgreSQLTestDatabase() }
    }

    private static let counter = Atomic<Int>(0)
    private static let administration = Mutex<PostgreSQLConnection?>(nil)

    /// Through the unix socket (trusted: no password).
    var options: PostgreSQLConnectionOptions {
        PostgreSQLConnectionOptions(uri: server.socketURI(database: name), applicationName: "reconcile-tests")
    }

    /// A store on this database (migrating it the first time).
    func openStore(migrate: Bool = true, node: String = "test-node") throws -> PostgreSQLOrderStore {
        try PostgreSQLOrderStore(options: options, node: node, migrate: migrate)
    }

    /// A connection of its own to this database.
    func connect() throws -> PostgreSQLConnection {
        try PostgreSQLConnection(options)
    }

    /// Whether, within 10 s, a session of this database came to wait for a lock another holds
    /// (`pg_stat_activity`): a race the test staged is then really under way.
    func someoneWaitsForALock() async throws -> Bool {
        let observer = try connect()
        let query = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        return await eventually(timeout: .seconds(10), every: .milliseconds(5)) { ((try? observer.scalar(query)) ?? 0) >= 1 }
    }
}
