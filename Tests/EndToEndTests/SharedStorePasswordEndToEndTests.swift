import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

/// A password in `[State] Database=` never shows, in whatever form libpq reads it: in the user
/// info with a `?` in it (the old redaction ended the user info there), behind a percent-encoded
/// key (`?%70assword=`), or as a `password=` query parameter. Checked in every place that prints
/// the connection: `check-config`, the daemon's start-up and migration lines, a connection error
/// at start-up, and `status` when the store cannot be opened. The test server trusts its socket,
/// so the daemon connects whatever the password says.
@Suite(
    "End to end: a shared store's password never shows", .serialized,
    .enabled(if: PostgreSQLTestServer.isEnabled, "no PostgreSQL server (reason printed above)"))
struct SharedStorePasswordEndToEndTests {
    static let secret = "Pw-s3cret-4711"

    /// The connection forms, for a database name.
    static let forms: [@Sendable (PostgreSQLTestServer, String) -> String] = [
        { "postgresql://\($0.user):\(secret)?x@/\($1)?host=\($0.socketDirectory)&port=\($0.port)" },
        { "postgresql://\($0.user)@/\($1)?host=\($0.socketDirectory)&port=\($0.port)&%70assword=\(secret)" },
        { "postgresql:///\($1)?host=\($0.socketDirectory)&port=\($0.port)&user=\($0.user)&password=\(secret)" },
    ]

    @Test("check-config, start-up and migration lines, a connection error and status show *** for it", arguments: 0..<3)
    func neverShown(_ form: Int) async throws {
        let server = try PostgreSQLTestServer.shared()
        let name = "e2e_password_\(form)_\(UInt32.random(in: 0 ... .max))"
        let admin = try PostgreSQLConnection(PostgreSQLConnectionOptions(uri: server.socketURI(database: "postgres")))
        try admin.execute("CREATE DATABASE \(name)")
        admin.close()

        let harness = Harness("pg-password")
        _ = harness.directory.write("shared-secret", "apple-s3cret\n")
        func configure(_ database: String) {
            harness.directory.write("reconciled.conf", """
                [Spool]
                Directory=spool
                [State]
                Database=\(database)
                [Control]
                Socket=run/control.sock
                [Verifier]
                Kind=apple
                URL=http://127.0.0.1:9/verifyReceipt
                BundleID=com.example.app
                SharedSecretFile=\(harness.directory.file("shared-secret"))
                """)
        }
        func check(_ shown: String, _ place: String) {
            #expect(!shown.contains(Self.secret), "\(place) shows the password: \(shown)")
            #expect(!shown.contains("s3cret?x"), "\(place): \(shown)")
        }

        configure(Self.forms[form](server, name))
        let checked = try await harness.ctl(["check-config"])
        #expect(checked.status == 0, "\(checked.error)")
        #expect(checked.output.contains("password") || checked.output.contains(":***@"), "\(checked.output)")
        #expect(checked.output.contains("***"), "\(checked.output)")
        check(checked.output + checked.error, "check-config")

        let daemon = try await harness.startDaemonAndWait(logLevel: "info")
        daemon.send(SIGTERM)
        _ = await daemon.wait()
        #expect(daemon.standardError.contains("on the shared store postgresql://"), "\(daemon.standardError)")
        #expect(daemon.standardError.contains("store postgresql://"), "no migration line: \(daemon.standardError)")
        check(daemon.standardError + daemon.standardOutput, "the daemon's start-up and migration lines")

        // A database that is not there: the connection error, from the daemon and from status.
        configure(Self.forms[form](server, name + "_missing"))
        let failed = try harness.startDaemon(logLevel: "info")
        let status = await failed.wait()
        #expect(status != 0 && status != nil)
        #expect(failed.standardError.contains("cannot open the store postgresql://"), "\(failed.standardError)")
        check(failed.standardError + failed.standardOutput, "the daemon's connection error")
        let asked = try await harness.ctl(["status"])
        #expect(asked.error.contains("cannot read the store: cannot open the store postgresql://"), "\(asked.error)")
        check(asked.output + asked.error, "status")
    }
}
