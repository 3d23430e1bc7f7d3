import ReconcileStore
import CPostgres
import Foundation

/// One PostgreSQL connection through libpq, synchronous like ``SQLiteConnection``: statements
/// prepared once per connection and cached by SQL text, parameters always sent apart from the SQL,
/// results read in text or binary format, and closure-scoped `READ COMMITTED` transactions.
///
/// Not thread-safe by itself: its owner confines it (``PostgreSQLOrderStore`` keeps it behind a
/// mutex). Errors are ``PostgreSQLError``s, which never carry parameter values or the password.
public final class PostgreSQLConnection {
    /// How the server sends result values.
    public enum ResultFormat: Int32, Sendable {
        /// Every value as text (`42`, `\x00ff` for bytea).
        case text = 0
        /// Integers in network byte order, bytea as its bytes, text as UTF-8.
        case binary = 1
    }

    private let handle: OpaquePointer
    public let options: PostgreSQLConnectionOptions
    /// Prepared statements of this session: SQL text → statement name.
    private var statements: [String: String] = [:]
    /// The same statements' names, found by the identity of the template they came from.
    private var keyed: [ObjectIdentifier: String] = [:]
    private var isClosed = false

    /// Connects: the URI's parameters, then `password` when given (it overrides the URI's);
    /// `client_encoding` is always UTF-8.
    ///
    /// - Throws: ``PostgreSQLError`` of category `connection`, naming the redacted URI.
    public init(_ options: PostgreSQLConnectionOptions) throws(PostgreSQLError) {
        self.options = options
        handle = try Self.connect(options)
    }

    deinit {
        close()
    }

    private static func connect(_ options: PostgreSQLConnectionOptions) throws(PostgreSQLError) -> OpaquePointer {
        // Later entries override earlier ones and the URI's (`dbname` expands into its parameters).
        var pairs = [("application_name", options.applicationName), ("connect_timeout", String(options.connectTimeoutSeconds))]
            + options.networkParameters + [("dbname", options.uri), ("client_encoding", "UTF8")]
        if let password = options.password { pairs.append(("password", password)) }
        let keywords: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.0) }
        let values: [UnsafeMutablePointer<CChar>?] = pairs.map { strdup($0.1) }
        defer {
            keywords.forEach { free($0) }
            values.forEach { free($0) }
        }
        let keywordList: [UnsafePointer<CChar>?] = keywords.map { UnsafePointer($0) } + [nil]
        let valueList: [UnsafePointer<CChar>?] = values.map { UnsafePointer($0) } + [nil]
        let connection: OpaquePointer? = PQconnectdbParams(keywordList, valueList, 1)
        guard let connection else {
            throw PostgreSQLError(category: .connection, message: "cannot connect to \(options.redactedURI): libpq is out of memory")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = scrubbed(errorMessage(connection), options)
            PQfinish(connection)
            throw PostgreSQLError(category: .connection, message: "cannot connect to \(options.redactedURI): \(message)")
        }
        reconcile_pq_silence_notices(connection)
        try applySessionSettings(connection, options)
        return connection
    }

    /// Sets the session's time-outs (``PostgreSQLConnectionOptions/sessionSettings``).
    private static func applySessionSettings(_ connection: OpaquePointer, _ options: PostgreSQLConnectionOptions) throws(PostgreSQLError) {
        let result = PQexec(connection, options.sessionSettings)
        defer { PQclear(result) }
        guard let result, PQresultStatus(result) == PGRES_COMMAND_OK else {
            let message = scrubbed(errorMessage(connection), options)
            throw PostgreSQLError(category: PQstatus(connection) == CONNECTION_OK ? .other : .connection, message: "cannot set the session's time-outs: \(message)")
        }
    }

    /// Closes the connection; it cannot be used afterwards.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        keyed.removeAll()
        statements.removeAll()
        PQfinish(handle)
    }

    /// Whether the connection is up, as far as libpq knows (a dropped connection shows after the
    /// next statement fails).
    public var isConnected: Bool { !isClosed && PQstatus(handle) == CONNECTION_OK }

    /// The server process serving this connection (`pg_backend_pid()`).
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// The server's version as a number (`150018` for 15.18).
    public var serverVersion: Int32 { PQserverVersion(handle) }

    /// Connects again with the same parameters, after the connection was lost. Statements are
    /// prepared again as they are used.
    public func reconnect() throws(PostgreSQLError) {
        precondition(!isClosed, "the connection is closed")
        keyed.removeAll()
        statements.removeAll()
        PQreset(handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgreSQLError(
                category: .connection,
                message: "cannot reconnect to \(options.redactedURI): \(Self.scrubbed(Self.errorMessage(handle), options))")
        }
        reconcile_pq_silence_notices(handle)
        try Self.applySessionSettings(handle, options)
    }

    /// The socket of the connection, for waiting on notifications (`-1` when closed).
    public var socket: Int32 { isClosed ? -1 : PQsocket(handle) }

    /// Reads what the server sent and returns the notifications received so far (channel and
    /// payload), without waiting.
    ///
    /// - Throws: a connection error when the connection was lost.
    public func notifications() throws(PostgreSQLError) -> [(channel: String, payload: String)] {
        precondition(!isClosed, "the connection is closed")
        guard PQconsumeInput(handle) == 1 else {
            throw PostgreSQLError(category: .connection, message: "the connection was lost: \(Self.scrubbed(Self.errorMessage(handle), options))")
        }
        var received: [(String, String)] = []
        while let notice = PQnotifies(handle) {
            received.append((String(cString: notice.pointee.relname), String(cString: notice.pointee.extra)))
            PQfreemem(notice)
        }
        return received
    }

    // MARK: - Statements

    /// Runs SQL text without parameters (schema scripts); several statements allowed.
    public func execute(_ sql: String) throws(PostgreSQLError) {
        precondition(!isClosed, "the connection is closed")
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
    }

    /// Runs one statement; returns the rows it changed (or returned).
    @discardableResult
    public func run(_ sql: String, _ parameters: [PostgreSQLValue] = [], key: ObjectIdentifier? = nil) throws -> Int {
        try withResult(sql, parameters, format: .text, key: key) { result in Int(String(cString: PQcmdTuples(result))) ?? 0 }
    }

    /// Runs a query and maps each row.
    public func query<T>(
        _ sql: String, _ parameters: [PostgreSQLValue] = [], format: ResultFormat = .binary, key: ObjectIdentifier? = nil,
        _ map: (PostgreSQLRow) throws -> T
    ) throws -> [T] {
        try withResult(sql, parameters, format: format, key: key) { result in
            try (0..<PQntuples(result)).map { try map(PostgreSQLRow(result: result, row: $0)) }
        }
    }

    /// The first row of a query, mapped, or `nil`.
    public func queryFirst<T>(
        _ sql: String, _ parameters: [PostgreSQLValue] = [], format: ResultFormat = .binary, key: ObjectIdentifier? = nil,
        _ map: (PostgreSQLRow) throws -> T
    ) throws -> T? {
        try withResult(sql, parameters, format: format, key: key) { result in
            PQntuples(result) > 0 ? try map(PostgreSQLRow(result: result, row: 0)) : nil
        }
    }

    /// A single integer (a count), or `nil` when the query returns no row or NULL.
    public func scalar(_ sql: String, _ parameters: [PostgreSQLValue] = []) throws -> Int64? {
        try queryFirst(sql, parameters) { $0.optionalInt64(0) } ?? nil
    }

    /// Prepares (once per session) and runs `sql`, then hands the result to `body` before
    /// freeing it.
    private func withResult<T>(
        _ sql: String, _ parameters: [PostgreSQLValue], format: ResultFormat, key: ObjectIdentifier? = nil,
        _ body: (OpaquePointer) throws -> T
    ) throws -> T {
        precondition(!isClosed, "the connection is closed")
        let name = try prepared(sql, key: key)
        // Every value in one buffer (text NUL-terminated, as libpq reads it); pointers into it.
        var storage: [UInt8] = []
        var offsets: [Int?] = []
        var lengths: [Int32] = []
        var formats: [Int32] = []
        for parameter in parameters {
            if let (bytes, binary) = try parameter.encoded() {
                offsets.append(storage.count)
                storage += bytes
                storage.append(0)
                lengths.append(Int32(bytes.count))
                formats.append(binary ? 1 : 0)
            } else {
                offsets.append(nil)
                lengths.append(0)
                formats.append(0)
            }
        }
        let result: OpaquePointer? = storage.withUnsafeBytes { buffer in
            let values = offsets.map { offset in offset.map { (buffer.baseAddress! + $0).assumingMemoryBound(to: CChar.self) } }
            return PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, format.rawValue)
        }
        defer { PQclear(result) }
        try check(result, sql: sql)
        return try body(result!)
    }

    /// The name of the session's prepared statement for `sql`, preparing it the first time.
    private func prepared(_ sql: String, key: ObjectIdentifier?) throws(PostgreSQLError) -> String {
        if let key, let name = keyed[key] { return name }
        if let name = statements[sql] {
            if let key { keyed[key] = name }
            return name
        }
        let name = "reconcile_\(statements.count + 1)"
        let result = PQprepare(handle, name, sql, 0, nil)
        defer { PQclear(result) }
        try check(result, sql: sql)
        statements[sql] = name
        if let key { keyed[key] = name }
        return name
    }

    // MARK: - Transactions

    /// Runs `body` in a `READ COMMITTED` transaction: committed when it returns, rolled back when
    /// it throws.
    ///
    /// - Throws: what `body` threw, or a ``PostgreSQLError``; one whose connection was lost during
    ///   `COMMIT` has ``PostgreSQLError/commitOutcomeUnknown`` set.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        precondition(!isClosed, "the connection is closed")
        precondition(PQtransactionStatus(handle) == PQTRANS_IDLE, "nested transactions are not supported")
        try execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        let result: T
        do {
            result = try body()
        } catch {
            rollback()
            throw error
        }
        do {
            // COMMIT of a transaction that failed earlier answers ROLLBACK, not an error.
            let tag = try commandTag("COMMIT")
            guard tag == "COMMIT" else {
                throw PostgreSQLError(category: .other, message: "the transaction was rolled back, not committed (an earlier statement in it failed)")
            }
        } catch var error as PostgreSQLError {
            if error.category == .connection { error.commitOutcomeUnknown = true }
            rollback()
            throw error
        }
        return result
    }

    /// Runs `body` under a savepoint inside the caller's transaction: when it throws, what it
    /// wrote is undone and the transaction goes on.
    @discardableResult
    public func savepoint<T>(_ body: () throws -> T) throws -> T {
        precondition(PQtransactionStatus(handle) == PQTRANS_INTRANS, "a savepoint needs a transaction")
        try execute("SAVEPOINT reconcile_savepoint")
        let result: T
        do {
            result = try body()
        } catch {
            try execute("ROLLBACK TO SAVEPOINT reconcile_savepoint")
            try execute("RELEASE SAVEPOINT reconcile_savepoint")
            throw error
        }
        try execute("RELEASE SAVEPOINT reconcile_savepoint")
        return result
    }

    /// Ends a transaction that failed, if the connection still has one open.
    private func rollback() {
        guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        PQclear(PQexec(handle, "ROLLBACK"))
    }

    /// Runs a statement without parameters and returns its command tag (`COMMIT`, `ROLLBACK`).
    private func commandTag(_ sql: String) throws(PostgreSQLError) -> String {
        let result = PQexec(handle, sql)
        defer { PQclear(result) }
        try check(result, sql: sql)
        return result.flatMap { PQcmdStatus($0) }.map { String(cString: $0) } ?? ""
    }

    // MARK: - Errors

    /// Throws when `result` is not a success.
    private func check(_ result: OpaquePointer?, sql: String) throws(PostgreSQLError) {
        if let result {
            let status = PQresultStatus(result)
            if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY { return }
        }
        throw error(from: result, sql: sql)
    }

    private func error(from result: OpaquePointer?, sql: String?) -> PostgreSQLError {
        let lost = PQstatus(handle) != CONNECTION_OK
        if let result, let state = PQresultErrorField(result, reconcile_pq_diag_sqlstate()) {
            var error = PostgreSQLError(
                sqlState: String(cString: state),
                primaryMessage: PQresultErrorField(result, reconcile_pq_diag_message_primary()).map { String(cString: $0) } ?? "(no message)",
                constraint: PQresultErrorField(result, reconcile_pq_diag_constraint_name()).map { String(cString: $0) }, sql: sql)
            if lost { error.category = .connection }
            return error
        }
        // libpq's own error (the server went away, out of memory): its message is about the
        // connection, never about values.
        let message = Self.scrubbed(Self.errorMessage(handle), options)
        return PostgreSQLError(category: lost ? .connection : .other, message: message.isEmpty ? "libpq failed without a message" : message, sql: sql)
    }

    private static func errorMessage(_ connection: OpaquePointer) -> String {
        guard let text = PQerrorMessage(connection) else { return "" }
        return String(cString: text).split(whereSeparator: \.isNewline).map { $0.trimmingSpaces }.joined(separator: " ")
    }

    /// libpq's message with the URI, and every password libpq read from it or was given, taken
    /// out; for a string libpq cannot parse, whatever the message quotes of it.
    static func scrubbed(_ message: String, _ options: PostgreSQLConnectionOptions) -> String {
        var text = message
        if !options.uri.isEmpty, options.redactedURI != options.uri { text = text.replacingOccurrences(of: options.uri, with: options.redactedURI) }
        let parsed = PostgreSQLConnectionString(options.uri)
        if parsed.options == nil { text = text.replacingOccurrences(of: #""[^"]*""#, with: "\"…\"", options: .regularExpression) }
        for secret in (parsed.secrets + [options.password ?? ""]).sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            text = text.replacingOccurrences(of: secret, with: "***")
        }
        return text
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
