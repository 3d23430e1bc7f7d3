import Testing
@testable import ReconcileStore

@Suite("PostgreSQL connection options")
struct PostgreSQLConnectionOptionsTests {
    @Test("the password never shows: not in the URI's user info, a password= parameter, or the separate password", arguments: [
        ("postgresql://reconciled:s3cret@db.example:5432/reconcile?sslmode=verify-full", "postgresql://reconciled:***@db.example:5432/reconcile?sslmode=verify-full"),
        ("postgresql://reconciled@db.example/reconcile?sslmode=require&password=s3cret&connect_timeout=5",
         "postgresql://reconciled@db.example/reconcile?sslmode=require&password=***&connect_timeout=5"),
        ("postgres://u:s3cret@[::1]/db", "postgres://u:***@[::1]/db"),
        ("host=db.example password='s3cret phrase' dbname=reconcile", "host=db.example password=*** dbname=reconcile"),
        ("host=db.example PASSWORD = s3cret dbname=reconcile", "host=db.example PASSWORD = *** dbname=reconcile"),
        ("postgresql://reconciled@db.example/reconcile", "postgresql://reconciled@db.example/reconcile"),
    ])
    func redaction(_ uri: String, _ expected: String) {
        let options = PostgreSQLConnectionOptions(uri: uri, password: "0ther-s3cret")
        #expect(options.redactedURI == expected)
        for shown in [options.description, options.debugDescription, String(reflecting: options), "\(options)"] {
            #expect(!shown.contains("s3cret"), "\(shown)")
        }
        var dumped = ""
        dump(options, to: &dumped)
        #expect(!dumped.contains("s3cret"), "\(dumped)")
    }
}
