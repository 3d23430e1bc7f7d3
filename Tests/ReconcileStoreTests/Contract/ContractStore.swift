import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite
@testable import ReconcilePostgreSQL

/// One kind of store the contract suite runs against: how to open a fresh, empty one. Every
/// test of ``OrderStoreContractTests`` runs once per kind, through the ``OrderStore`` protocol
/// only (``OperableStoreContractTests`` through ``OperableOrderStore``), so that no store can
/// drift from the rules the others apply.
struct ContractStore: Sendable, CustomTestStringConvertible {
    var name: String
    var open: @Sendable () async throws -> OpenedStore

    var testDescription: String { name }

    /// SQLite in a temporary directory.
    static let sqlite = ContractStore(name: "SQLite") {
        let directory = TemporaryDirectory(prefix: "contract")
        let path = directory.file("orders.db")
        let store = try SQLiteOrderStore(path: path, mode: .owner)
        return OpenedStore(operable: store, location: path, keepAlive: directory)
    }

    /// PostgreSQL: a fresh database on the test process's server.
    static let postgres = ContractStore(name: "PostgreSQL") {
        let database = try await PostgreSQLTestDatabase.make()
        let store = try await offPool { try database.openStore() }
        return OpenedStore(operable: store, location: database.options.redactedURI, keepAlive: database)
    }

    /// Every store this machine can run (PostgreSQL when a server starts, or when
    /// `RECONCILE_REQUIRE_POSTGRES=1` says its tests must run and fail without one).
    static var all: [ContractStore] { PostgreSQLTestServer.isEnabled ? [.sqlite, .postgres] : [.sqlite] }
}

/// A store under test and what must live as long as it (its directory, its server). Tests
/// call ``close()`` in a `defer`, which also keeps it alive until then (ARC may release a value
/// after its last use).
struct OpenedStore {
    /// The store as `reconcilectl` and the daemon's reports see it (``OperableOrderStore``).
    var operable: any OperableOrderStore
    /// Where it is, as ``OperableOrderStore/location`` must name it (its path, or its URI as
    /// libpq reads it, without a password).
    var location: String
    var keepAlive: AnyObject?

    /// The store as the scheduler sees it.
    var store: any OrderStore { operable }

    func close() {
        withExtendedLifetime(keepAlive) {}
    }
}
