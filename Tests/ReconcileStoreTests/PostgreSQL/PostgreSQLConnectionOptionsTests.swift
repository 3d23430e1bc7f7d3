import Testing
@testable import ReconcileStore
@testable import ReconcilePostgreSQL

@Suite("PostgreSQL connection options")
struct PostgreSQLConnectionOptionsTests {
    /// Connection strings with a password somewhere libpq reads one, each holding `s3cret`, and
    /// what is shown of them: libpq's own reading, the password as `***`.
    static let forms: [(String, String)] = [
        ("postgresql://reconciled:s3cret@db.example:5432/reconcile?sslmode=verify-full", "postgresql://reconciled:***@db.example:5432/reconcile?sslmode=verify-full"),
        ("postgresql://reconciled@db.example/reconcile?sslmode=require&password=s3cret&connect_timeout=5",
         "postgresql://reconciled:***@db.example/reconcile?connect_timeout=5&sslmode=require"),
        // libpq reads the user info up to the `@`: a `?` in the password does not end it.
        ("postgresql://reconciled:s3cret?x@db.example/reconcile", "postgresql://reconciled:***@db.example/reconcile"),
        ("postgresql://reconciled:pa?s3cret@db.example/reconcile?sslmode=require", "postgresql://reconciled:***@db.example/reconcile?sslmode=require"),
        // Query keys are percent-decoded: `%70assword` is `password`.
        ("postgresql://reconciled@db.example/reconcile?%70assword=s3cret", "postgresql://reconciled:***@db.example/reconcile"),
        ("postgresql://db.example/reconcile?pass%77ord=s3cret&sslmode=require", "postgresql://db.example/reconcile?password=***&sslmode=require"),
        ("postgresql://u:%73%33cret@db.example/x", "postgresql://u:***@db.example/x"),
        ("postgresql://u@db.example/x?sslpassword=s3cret", "postgresql://u@db.example/x?sslpassword=***"),
        ("postgres://u:s3cret@[::1]/db", "postgresql://u:***@/db?host=%3A%3A1"),
        ("postgresql://u:s3cret@/db?host=/run/postgresql&port=5433", "postgresql://u:***@/db?host=%2Frun%2Fpostgresql&port=5433"),
        ("postgresql://u:s3cret@a.example:1,b.example:2/db", "postgresql://u:***@/db?host=a.example%2Cb.example&port=1%2C2"),
        ("host=db.example password='s3cret phrase' dbname=reconcile", "password=*** dbname=reconcile host=db.example"),
        ("host=db.example password = s3cret dbname=reconcile", "password=*** dbname=reconcile host=db.example"),
        ("password=s3cret", "password=***"),
        ("postgresql://reconciled@db.example/reconcile", "postgresql://reconciled@db.example/reconcile"),
        // What libpq cannot parse is not shown at all (it cannot tell where a password is).
        ("postgresql://u@db.example/x?passwd=s3cret", "(a connection string libpq cannot parse)"),
        ("host=db.example s3cret", "(a connection string libpq cannot parse)"),
    ]

    @Test("the password never shows: in the user info (with ? in it), a password= parameter, a percent-encoded key, key=value, or the separate password", arguments: forms)
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

    @Test("what is shown is what libpq reads, but for the secrets", arguments: forms.map(\.0))
    func redactionKeepsTheRest(_ uri: String) throws {
        let original = PostgreSQLConnectionString(uri)
        guard let options = original.options else { return #expect(PostgreSQLConnectionString(original.redacted).options == nil) }
        let shown = try #require(PostgreSQLConnectionString(original.redacted).options)
        #expect(shown == options.map { option in
            var option = option
            if option.isSecret { option.value = "***" }
            return option
        })
        #expect(original.secrets.contains { $0.contains("s3cret") } == (uri.contains("s3cret") || uri.contains("%73%33cret")))
    }

    @Test("libpq's messages lose the URI, the passwords in it and the one given apart")
    func scrubbedMessages() {
        let options = PostgreSQLConnectionOptions(uri: "postgresql://u@db.example/x?%70assword=s3cret", password: "0ther-s3cret")
        let scrubbed = PostgreSQLConnection.scrubbed("bad \(options.uri): s3cret and 0ther-s3cret", options)
        #expect(scrubbed == "bad postgresql://u:***@db.example/x: *** and ***")
        let unparsable = PostgreSQLConnectionOptions(uri: "host=db.example s3cret")
        #expect(PostgreSQLConnection.scrubbed(#"missing "=" after "s3cret" in connection info string"#, unparsable) == #"missing "…" after "…" in connection info string"#)
    }
}
