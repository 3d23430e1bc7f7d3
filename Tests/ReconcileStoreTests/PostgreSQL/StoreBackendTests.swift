import ReconcileCore
import ReconcileFoundation
import ReconcilePostgreSQL
import Testing

/// The one decision both executables make: which store a configuration names.
@Suite("Store backend")
struct StoreBackendTests {
    func configuration(_ state: String) throws -> Configuration {
        try ConfigurationParser.parse([
            ConfigurationSource(path: "/etc/reconciled/reconciled.conf", text: "[State]\n\(state)\n[Verifier]\nKind=http\nURL=https://merchant.example/verify\n")
        ])
    }

    @Test("a path is SQLite; a postgresql:// URI is the shared store, its password and name given, shown without the password")
    func choice() throws {
        guard case .sqlite(let path) = StoreBackend(try configuration("Database=/var/lib/reconciled/orders.db"), password: "ignored") else {
            Issue.record("a path must be SQLite")
            return
        }
        #expect(path == "/var/lib/reconciled/orders.db")

        let shared = StoreBackend(
            try configuration("Database=postgresql://reconciled:inline@db.example/reconcile"), password: "s3cret", applicationName: "reconcilectl")
        guard case .postgresql(let options) = shared else {
            Issue.record("a postgresql:// URI must be the shared store")
            return
        }
        #expect(options.password == "s3cret")
        #expect(options.applicationName == "reconcilectl")
        #expect(!shared.displayName.contains("inline") && !shared.displayName.contains("s3cret"))
        #expect(shared.displayName.contains("db.example/reconcile"))
    }
}
