import ReconcileFoundation
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
    /// Writes held back by ``sendLater(_:_:key:batch:)``, in order: sent in one pipeline with the
    /// next statement that needs an answer, or before `COMMIT`, `SAVEPOINT` and the like. Uses of
    /// a template with a batch form are gathered into one multi-row statement (``QueuedWrite``).
    private var queued: [QueuedWrite] = []
    /// How many uses ``queued`` holds, all its statements' rows counted.
    private var queuedUses = 0
    /// Queries that must return no row for the transaction to commit
    /// (``checkBeforeCommit(_:what:)``), and what each checks.
    var commitChecks: [(query: SQLStatement, what: String)] = []
    /// Statements sent in pipeline mode whose answers are not read yet, in order; `nil` outside
    /// pipeline mode. A transaction streams its writes while it goes on encoding the next ones
    /// (``stream(_:)``), so that the server works while we do; the answers are read (and an
    /// error thrown) at the next statement that needs one, or before `COMMIT`.
    private var inFlight: [InFlight]?

    /// How many prepared statements this connection has run (each multi-row statement once): for
    /// tests and benchmarks that count round trips' contents.
    package private(set) var statementsRun = 0

    /// At most this many statements wait in ``queued``: a pipeline's answers stay far below
    /// what the socket's buffers hold, so the server never blocks writing them while we write.
    static let pipelineLimit = 256
    /// At most this many uses wait in ``queued`` (and in one multi-row statement), so that a
    /// statement's JSON stays small (a few hundred KB).
    static let queuedUseLimit = 2_048
    /// At most this many uses in one statement of a batch whose rows are read
    /// (``fetchBatched(_:_:_:)``): small enough that the server starts on the first while the
    /// next are encoded.
    static let streamedUseLimit = 500

    /// A held-back write: one use of a statement, or several of one template with a batch form
    /// (``SQLBatch``), sent as one statement.
    private struct QueuedWrite {
        var name: String
        var sql: String
        var uses: [[PostgreSQLValue]]
        var batch: SQLBatch?
        var template: ObjectIdentifier?
        /// The keys (order references) of ``uses``.
        var keys: Set<Int64>
    }

    /// A prepared statement, its SQL text (for errors) and its parameters.
    private struct QueuedStatement {
        var name: String
        var sql: String
        var parameters: [PostgreSQLValue]
        /// How its answer is handled when read (nothing: only checked for an error).
        var answer: Answer = .checked
        /// The format its rows come in.
        var format: ResultFormat = .text
    }

    /// What is done with a streamed statement's answer.
    private enum Answer {
        /// Checked for an error, then freed.
        case checked
        /// Kept for the caller of ``finishStream()``, which frees it.
        case kept
        /// Handed to a closure (which may throw), then freed.
        case collected((OpaquePointer) throws -> Void)
    }

    /// A statement in flight: its SQL (for errors) and what becomes of its answer.
    private struct InFlight {
        var sql: String
        var answer: Answer
    }

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
        dropQueued()
        inFlight = nil
        commitChecks.removeAll()
        keyed.removeAll()
        statements.removeAll()
        PQfinish(handle)
    }

    /// Whether the connection is up, as far as libpq knows (a dropped connection shows after the
    /// next statement fails).
    public var isConnected: Bool { !isClosed && PQstatus(handle) == CONNECTION_OK }

    /// Whether a transaction is open (and has not failed, as far as the answers read so far
    /// tell): with statements in flight the server's status reads "active".
    var inTransaction: Bool {
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || (inFlight != nil && status == PQTRANS_ACTIVE)
    }

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
        dropQueued()
        if inFlight != nil {
            inFlight = nil
            PQexitPipelineMode(handle)
        }
        commitChecks.removeAll()
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
        try sendQueued()
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

    /// The first row of each query, mapped, or `nil`: every query (and the writes held back)
    /// sent in one pipeline, so that many answers cost one round trip.
    public func queryEach<T>(
        _ queries: [(sql: String, parameters: [PostgreSQLValue], key: ObjectIdentifier?)], format: ResultFormat = .binary,
        _ map: (PostgreSQLRow) throws -> T
    ) throws -> [T?] {
        precondition(!isClosed, "the connection is closed")
        // Prepared first: a failure there must not drop the writes held back.
        let asked = try queries.map { QueuedStatement(name: try prepared($0.sql, key: $0.key), sql: $0.sql, parameters: $0.parameters) }
        var rows: [T?] = []
        rows.reserveCapacity(asked.count)
        // In pipelines of at most ``pipelineLimit`` queries, so that their answers never fill
        // the socket's buffers while we are still writing.
        for start in stride(from: 0, to: asked.count, by: Self.pipelineLimit) {
            let chunk = Array(asked[start..<min(start + Self.pipelineLimit, asked.count)])
            let statements = try takeQueued() + chunk
            let answers = try pipeline(statements, answered: chunk.count, format: format)
            defer { for answer in answers { PQclear(answer) } }
            for result in answers { rows.append(PQntuples(result) > 0 ? try map(PostgreSQLRow(result: result, row: 0)) : nil) }
        }
        return rows
    }

    /// The first row of each use of one template, as ``queryEach(_:format:_:)`` answers, from
    /// the template's multi-row form (``SQLBatch``): one statement for up to ``queuedUseLimit``
    /// uses, its rows matched to their uses by the text value each returns.
    ///
    /// - Returns: `nil` when two uses share that value (no row could tell them apart): the
    ///   caller sends them one by one.
    package func fetchBatched<T>(_ uses: [[PostgreSQLValue]], _ batch: SQLBatch, _ map: (PostgreSQLRow) throws -> T) throws -> [T?]? {
        guard let multiRow = batch.postgresql, let (valueIndex, column) = batch.returned else {
            preconditionFailure("a batch whose rows are read")
        }
        var positions: [PostgreSQLValue: Int] = [:]
        for (index, use) in uses.enumerated() where positions.updateValue(index, forKey: use[valueIndex]) != nil { return nil }
        let name = try prepared(multiRow, key: nil)
        // Streamed a chunk at a time with the writes held back: the server inserts one chunk
        // while the next is encoded. The rows are read once all are sent.
        return try withoutActuallyEscaping(map) { map in
            let rows = Box([T?](repeating: nil, count: uses.count))
            // The collectors hold `map`: none may outlive this call, even when it fails.
            defer { discardStream() }
            try stream(takeQueued())
            for start in stride(from: 0, to: uses.count, by: Self.streamedUseLimit) {
                let chunk = Array(uses[start..<min(start + Self.streamedUseLimit, uses.count)])
                let collect: (OpaquePointer) throws -> Void = { result in
                    for row in 0..<PQntuples(result) {
                        let found = PostgreSQLRow(result: result, row: row)
                        guard let index = positions[.text(found.string(column))] else {
                            throw PostgreSQLError(category: .other, message: "a multi-row statement returned a row for no use of it", sql: multiRow)
                        }
                        rows.value[index] = try map(found)
                    }
                }
                try stream([QueuedStatement(
                    name: name, sql: multiRow, parameters: try Self.batchParameters(chunk, batch), answer: .collected(collect), format: .binary)])
            }
            _ = try finishStream()
            return rows.value
        }
    }

    /// Runs a write whose answer nobody reads. Inside a transaction it is held back and sent in
    /// one pipeline (libpq's pipeline mode) with the next statement that needs an answer, so that
    /// a turn's writes cost one round trip instead of one each; an error it raises is thrown by
    /// that statement, or by `COMMIT`, and the transaction rolls back as it would have. Outside a
    /// transaction it runs at once.
    ///
    /// With a `batch` form, the write joins the last held-back statement of the same template
    /// (`key`) unless a write of its own order (the value at ``SQLBatch/keyIndex``), or one
    /// without a batch form, was held back after it: writes of different orders are independent,
    /// so only those move, and each order's writes keep their order.
    package func sendLater(_ sql: String, _ parameters: [PostgreSQLValue] = [], key: ObjectIdentifier? = nil, batch: SQLBatch? = nil) throws {
        precondition(!isClosed, "the connection is closed")
        guard inTransaction else {
            try run(sql, parameters, key: key)
            return
        }
        let name = try prepared(sql, key: key)
        queuedUses += 1
        if let batch, let key, case .integer(let orderKey) = parameters[batch.keyIndex] {
            if let index = batchJoining(key, orderKey: orderKey, onePerKey: batch.onePerKey) {
                queued[index].uses.append(parameters)
                queued[index].keys.insert(orderKey)
            } else {
                queued.append(QueuedWrite(name: name, sql: sql, uses: [parameters], batch: batch, template: key, keys: [orderKey]))
            }
        } else {
            queued.append(QueuedWrite(name: name, sql: sql, uses: [parameters], batch: nil, template: key, keys: []))
        }
        if queued.count >= Self.pipelineLimit || queuedUses >= Self.queuedUseLimit { try stream(takeQueued()) }
    }

    /// The held-back statement of `template` that a write of order `orderKey` may join, if any:
    /// the last one, when nothing held back after it writes that order or has no batch form.
    private func batchJoining(_ template: ObjectIdentifier, orderKey: Int64, onePerKey: Bool) -> Int? {
        for index in queued.indices.reversed() {
            let write = queued[index]
            let holdsKey = write.keys.contains(orderKey)
            if write.template == template, write.batch?.postgresql != nil, !(onePerKey && holdsKey) { return index }
            if write.batch == nil || holdsKey { return nil }
        }
        return nil
    }

    /// The held-back writes as statements to send, emptying the queue: a write of several uses
    /// becomes its batch form, the uses one JSON array.
    private func takeQueued() throws(PostgreSQLError) -> [QueuedStatement] {
        let writes = queued
        dropQueued()
        var statements: [QueuedStatement] = []
        statements.reserveCapacity(writes.count)
        for write in writes {
            guard write.uses.count > 1, let batch = write.batch, let multiRow = batch.postgresql else {
                statements.append(QueuedStatement(name: write.name, sql: write.sql, parameters: write.uses[0]))
                continue
            }
            let parameters = try Self.batchParameters(write.uses, batch)
            statements.append(QueuedStatement(name: try prepared(multiRow, key: nil), sql: multiRow, parameters: parameters))
        }
        return statements
    }

    /// The parameters of `batch`'s multi-row statement for `uses`: one binary array per value
    /// (``SQLBatch/arrayTypes``), or one JSON array of objects.
    private static func batchParameters(_ uses: [[PostgreSQLValue]], _ batch: SQLBatch) throws(PostgreSQLError) -> [PostgreSQLValue] {
        guard let types = batch.arrayTypes else { return [.text(try PostgreSQLJSONRows.encode(uses, columns: batch.columns))] }
        return try types.enumerated().map { (column, type) throws(PostgreSQLError) in
            .bytes(try PostgreSQLBinaryArray.encode(uses.map { $0[column] }, type: type))
        }
    }

    private func dropQueued() {
        queued.removeAll()
        queuedUses = 0
    }

    /// Runs the transaction's ``commitChecks`` (with the writes held back, in one round trip,
    /// and as one statement when they share a multi-row form).
    ///
    /// - Throws: a ``PostgreSQLError`` of category ``PostgreSQLError/Category/conflict`` naming
    ///   the first check that found a row.
    private func runCommitChecks() throws {
        guard !commitChecks.isEmpty else { return }
        let checks = commitChecks
        commitChecks = []
        let found = try fetchEach(checks.map(\.query)) { _ in true }
        if let failed = found.firstIndex(where: { $0 != nil }) {
            throw PostgreSQLError.committedFirst(checks[failed].what, sql: checks[failed].query.render(.postgresql).sql)
        }
    }

    /// A single integer (a count), or `nil` when the query returns no row or NULL.
    public func scalar(_ sql: String, _ parameters: [PostgreSQLValue] = []) throws -> Int64? {
        try queryFirst(sql, parameters) { $0.optionalInt64(0) } ?? nil
    }

    /// Prepares (once per session) and runs `sql`, then hands the result to `body` before
    /// freeing it. Writes held back by ``sendLater(_:_:key:batch:)`` go first, in the same pipeline.
    private func withResult<T>(
        _ sql: String, _ parameters: [PostgreSQLValue], format: ResultFormat, key: ObjectIdentifier? = nil,
        _ body: (OpaquePointer) throws -> T
    ) throws -> T {
        precondition(!isClosed, "the connection is closed")
        let name = try prepared(sql, key: key)
        let result: OpaquePointer?
        if queued.isEmpty && inFlight == nil {
            statementsRun += 1
            let answer = try EncodedParameters(parameters).withPointers { count, values, lengths, formats in
                PQexecPrepared(handle, name, count, values, lengths, formats, format.rawValue)
            }
            do {
                try check(answer, sql: sql)
            } catch {
                PQclear(answer)
                throw error
            }
            result = answer
        } else {
            let statements = try takeQueued() + [QueuedStatement(name: name, sql: sql, parameters: parameters)]
            result = try pipeline(statements, answered: 1, format: format)[0]
        }
        defer { PQclear(result) }
        return try body(result!)
    }

    /// Sends the writes held back by ``sendLater(_:_:key:batch:)``, if any, and reads their
    /// answers and those of every statement in flight.
    private func sendQueued() throws(PostgreSQLError) {
        try stream(takeQueued(), push: false)
        try finishWrites()
    }

    /// ``finishStream()`` for writes: their answers are only checked.
    private func finishWrites() throws(PostgreSQLError) {
        guard inFlight != nil else { return }
        precondition(inFlight?.allSatisfy { if case .checked = $0.answer { true } else { false } } == true, "answers to read")
        do {
            _ = try finishStream()
        } catch let error as PostgreSQLError {
            throw error
        } catch {
            throw PostgreSQLError(category: .other, message: "\(error)")
        }
    }

    /// Sends `statements` in one pipeline, after those in flight, followed by a sync, and reads
    /// every answer: one round trip for all of them.
    ///
    /// - Returns: the results of the last `answered` statements, in order (the caller frees
    ///   them).
    /// - Throws: the first statement's error (the server skips the rest, and the transaction is
    ///   then failed), or a connection error.
    private func pipeline(_ statements: [QueuedStatement], answered: Int, format: ResultFormat) throws -> [OpaquePointer] {
        var statements = statements
        for index in statements.indices.suffix(answered) {
            statements[index].answer = .kept
            statements[index].format = format
        }
        try stream(statements, push: false)
        return try finishStream()
    }

    /// Sends `statements` in pipeline mode without waiting for their answers (entering it if
    /// need be). With `push`, they go to the server now and what it has answered meanwhile is
    /// read into libpq's buffer, so that it never blocks writing to us while we write to it;
    /// without, they wait for the sync of ``finishStream()``, which the caller sends next.
    private func stream(_ statements: [QueuedStatement], push: Bool = true) throws(PostgreSQLError) {
        guard !statements.isEmpty else { return }
        if inFlight == nil {
            guard PQenterPipelineMode(handle) == 1 else { throw error(from: nil, sql: statements.first?.sql) }
            inFlight = []
        }
        for statement in statements {
            let encoded = try EncodedParameters(statement.parameters)
            let sent = encoded.withPointers { count, values, lengths, formats in
                PQsendQueryPrepared(handle, statement.name, count, values, lengths, formats, statement.format.rawValue)
            }
            guard sent == 1 else { throw abandonStream(failing: statement.sql) }
            inFlight?.append(InFlight(sql: statement.sql, answer: statement.answer))
            statementsRun += 1
        }
        guard push else { return }
        guard PQsendFlushRequest(handle) == 1, PQflush(handle) == 0 else { throw abandonStream(failing: statements.last?.sql) }
        _ = PQconsumeInput(handle)
    }

    /// Ends pipeline mode: a sync, then each statement's answer read in order (kept, handed to
    /// its collector, or checked), and the sync's.
    ///
    /// - Returns: the kept answers, in order (the caller frees them).
    /// - Throws: the first failed statement's error (the server skipped the rest), a collector's,
    ///   or a connection error; after every answer was read.
    private func finishStream() throws -> [OpaquePointer] {
        guard let statements = inFlight else { return [] }
        inFlight = nil
        guard PQpipelineSync(handle) == 1 else {
            let failure = error(from: nil, sql: nil)
            PQexitPipelineMode(handle)
            throw failure
        }
        var failure: (any Error)?
        var kept: [OpaquePointer] = []
        var index = 0
        var nulls = 0
        // Each statement's results end with a NULL; the sync's result ends the pipeline.
        while true {
            guard let result = PQgetResult(handle) else {
                index += 1
                nulls += 1
                // A lost connection answers NULL for ever and never the sync.
                if nulls > statements.count || PQstatus(handle) != CONNECTION_OK {
                    failure = failure ?? error(from: nil, sql: nil)
                    break
                }
                continue
            }
            let status = PQresultStatus(result)
            if status == PGRES_PIPELINE_SYNC {
                PQclear(result)
                break
            }
            let succeeded = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_EMPTY_QUERY
            let sql = index < statements.count ? statements[index].sql : nil
            if !succeeded, failure == nil, status != PGRES_PIPELINE_ABORTED { failure = error(from: result, sql: sql) }
            guard succeeded, failure == nil, index < statements.count else {
                PQclear(result)
                continue
            }
            switch statements[index].answer {
            case .checked:
                PQclear(result)
            case .kept:
                kept.append(result)
            case .collected(let collect):
                do { try collect(result) } catch { failure = error }
                PQclear(result)
            }
        }
        PQexitPipelineMode(handle)
        if failure == nil, kept.count != statements.count(where: { if case .kept = $0.answer { true } else { false } }) {
            failure = PostgreSQLError(category: .other, message: "the pipeline ended without every statement's answer", sql: statements.last?.sql)
        }
        if let failure {
            for answer in kept { PQclear(answer) }
            throw failure
        }
        return kept
    }

    /// Leaves pipeline mode after a failure to send, reading (and dropping) whatever answers
    /// come; returns the error that names `sql`.
    private func abandonStream(failing sql: String?) -> PostgreSQLError {
        let failure = error(from: nil, sql: sql)
        discardStream()
        return failure
    }

    /// Ends pipeline mode, dropping the answers of the statements in flight unread (a failed
    /// transaction's, or a savepoint's being rolled back).
    private func discardStream() {
        guard var statements = inFlight else { return }
        for index in statements.indices { statements[index].answer = .checked }
        inFlight = statements
        _ = try? finishStream()
    }

    /// The name of the session's prepared statement for `sql`, preparing it the first time.
    private func prepared(_ sql: String, key: ObjectIdentifier?) throws(PostgreSQLError) -> String {
        if let key, let name = keyed[key] { return name }
        if let name = statements[sql] {
            if let key { keyed[key] = name }
            return name
        }
        let name = "reconcile_\(statements.count + 1)"
        // PREPARE is no pipeline statement: the answers in flight are read first.
        try finishWrites()
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
            try runCommitChecks()
            try sendQueued()
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
        precondition(inTransaction, "a savepoint needs a transaction")
        try execute("SAVEPOINT reconcile_savepoint")
        let checks = commitChecks.count
        let result: T
        do {
            result = try body()
        } catch {
            // What the body held back or streamed is undone with the rest of it, and so are its
            // checks.
            discardStream()
            dropQueued()
            commitChecks.removeSubrange(checks...)
            try execute("ROLLBACK TO SAVEPOINT reconcile_savepoint")
            try execute("RELEASE SAVEPOINT reconcile_savepoint")
            throw error
        }
        try execute("RELEASE SAVEPOINT reconcile_savepoint")
        return result
    }

    /// Ends a transaction that failed, if the connection still has one open.
    private func rollback() {
        discardStream()
        dropQueued()
        commitChecks.removeAll()
        guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_IDLE else { return }
        PQclear(PQexec(handle, "ROLLBACK"))
    }

    /// Runs a statement without parameters and returns its command tag (`COMMIT`, `ROLLBACK`).
    private func commandTag(_ sql: String) throws(PostgreSQLError) -> String {
        try sendQueued()
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

/// Parameters as libpq reads them: every value in one buffer (text NUL-terminated), and
/// pointers into it.
private struct EncodedParameters {
    private var storage: [UInt8] = []
    private var offsets: [Int?] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []

    init(_ parameters: [PostgreSQLValue]) throws(PostgreSQLError) {
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
    }

    func withPointers<R>(_ body: (Int32, [UnsafePointer<CChar>?], [Int32], [Int32]) -> R) -> R {
        storage.withUnsafeBytes { buffer in
            let values = offsets.map { offset in offset.map { UnsafePointer((buffer.baseAddress! + $0).assumingMemoryBound(to: CChar.self)) } }
            return body(Int32(offsets.count), values, lengths, formats)
        }
    }
}

/// A value a closure fills in, for one that cannot capture a variable by reference.
private final class Box<Value> {
    var value: Value

    init(_ value: Value) {
        self.value = value
    }
}
