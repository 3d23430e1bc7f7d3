import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL
import ReconcileSQLite
import ReconcileSystem

/// The operator's actions on orders: `retry`, `hold`, `release`, `resolve`, `cancel`
/// (DESIGN §4, §10). While the daemon runs they are requests over its control socket, applied by
/// the daemon (an order whose attempt is in flight gets the action when the attempt ends);
/// without a daemon they are applied to the store directly, by its owner only.
enum OperatorCommand {
    static var specs: [CommandSpec] {
        [
            CommandSpec(
                name: "retry", abstract: "Make orders due now, granting at least one more attempt.",
                usage: "retry (<order-id>... | - | <filters>) [--reset-attempts] [--force] [--note <text>] [--json]",
                discussion: """
                    Works on pending, rejected, expired and escalated orders (an order escalated
                    during delivery goes back to verified). On a finished order it sends the
                    order's escalated follow-ups again (a Google Play acknowledgement or
                    consumption), and the order stays finished. --reset-attempts also zeroes the
                    attempt count and restarts the age clock. Retrying an order escalated as a
                    duplicate_transaction needs --force. With --state, every order in the state
                    is retried in batches of 1,000 while the daemon goes on serving; the first
                    orders of each kind are printed, then the counts, and a stop of the daemon
                    midway says how many were changed and how many were not reached.
                    \(bulkHelp)
                    """,
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to retry.")],
                options: OrderFilterOptions.options + [
                    OptionSpec(long: "reset-attempts", short: nil, valueName: nil, help: "Zero the attempts and restart the age clock."),
                    OptionSpec(long: "force", short: "f", valueName: nil, help: "Retry a duplicate_transaction escalation."),
                    OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history."),
                    jsonOption,
                ]) { try run(.retry, $0, $1) },
            CommandSpec(
                name: "hold", abstract: "Keep orders from being attempted until released.",
                usage: "hold (<order-id>... | - | <filters>) [--note <text>] [--json]",
                discussion: bulkHelp,
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to hold.")],
                options: OrderFilterOptions.options + [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history."), jsonOption]
            ) { try run(.hold, $0, $1) },
            CommandSpec(
                name: "release", abstract: "Return held orders to the state they were held in.",
                usage: "release (<order-id>... | - | <filters>) [--note <text>] [--json]",
                discussion: bulkHelp,
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to release.")],
                options: OrderFilterOptions.options + [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history."), jsonOption]
            ) { try run(.release, $0, $1) },
            CommandSpec(
                name: "resolve", abstract: "Finish an order by hand.",
                usage: "resolve <order-id> --note <text> [--transaction-id <id>] [--json]",
                discussion: "The order is recorded as finished by the operator. --transaction-id claims that transaction for it.",
                arguments: [ArgumentSpec(name: "order-id", help: "The order to finish.")],
                options: [
                    OptionSpec(long: "note", short: "m", valueName: "text", help: "Why (required)."),
                    OptionSpec(long: "transaction-id", short: nil, valueName: "id", help: "Claim this transaction for the order."),
                    jsonOption,
                ]
            ) { try run(.resolve, $0, $1) },
            CommandSpec(
                name: "cancel", abstract: "Give up on an order for good.",
                usage: "cancel (<order-id>... | - | <filters>) --note <text> [--json]",
                discussion: bulkHelp,
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to cancel.")],
                options: OrderFilterOptions.options + [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why (required)."), jsonOption]
            ) { try run(.cancel, $0, $1) },
        ]
    }

    static let bulkHelp = """
        Orders are named as arguments, or one per line on standard input with '-' (as
        postsuper -d -), or chosen by the filters list takes: --state, --product,
        --reason, --older-than, --store (<filters>). Many orders go to the daemon in
        requests of \(chunkSize), with progress on standard error when it is a terminal;
        the first orders of each kind are printed, then the counts.
        """

    static let jsonOption = OptionSpec(long: "json", short: nil, valueName: nil, help: "Print the outcome as JSON (see docs/reconcilectl.md).")

    /// Order ids per control request: 250 of at most 128 bytes stay well inside its 64 KiB.
    static let chunkSize = 250
    /// Orders of each kind printed when many are acted on.
    static let sampleSize = 10

    /// Where the orders of an action come from.
    enum Selection: Equatable {
        /// Named on the command line: each printed.
        case named([String])
        /// Many: from standard input or a filter; the first of each kind printed, then counts.
        case many([String])
        /// Every order in a state, applied by the daemon in batches (`retry --state`).
        case state(OrderState)
    }

    static func run(_ action: OperatorAction, _ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let name = action.rawValue
        let positionals = arguments.positionals
        let filtered = OrderFilterOptions.given(arguments)
        if filtered && !positionals.isEmpty {
            throw CommandLineError.usage("Give order ids, '-' or filters, not more than one of them", command: name)
        }
        if positionals.contains("-") && positionals != ["-"] {
            throw CommandLineError.usage("'-' reads the order ids from standard input; give no others beside it", command: name)
        }
        for id in positionals where id != "-" && !OrderFileParser.isValidOrderID(id) {
            throw CommandLineError.usage("'\(id)' is not an order id (1–128 of A-Z a-z 0-9 . _ : -)", command: name)
        }
        if !filtered && positionals.isEmpty {
            throw CommandLineError.usage("Missing expected argument '<order-id>' (or '-', or a filter such as --state)", command: name)
        }
        if action == .resolve && (positionals.count > 1 || positionals == ["-"]) {
            throw CommandLineError.usage("resolve takes one order", command: name)
        }
        let note = arguments.value("note")
        if (action == .resolve || action == .cancel) && (note?.isEmpty ?? true) {
            throw CommandLineError.usage("Missing expected argument '--note <text>'", command: name)
        }
        if let note, !ControlRequest.isValidNote(note) {
            throw CommandLineError.usage("'--note' must be one line of printable text of at most 1000 bytes", command: name)
        }
        if arguments.value("transaction-id")?.isEmpty == true {
            throw CommandLineError.usage("'--transaction-id' must not be empty", command: name)
        }
        let filter = try OrderFilterOptions.filter(arguments, command: name, now: context.now(), limit: Int(Int32.max))

        let environment = try CommandEnvironment(context)
        let selection: Selection
        if positionals == ["-"] {
            selection = .many(try readOrderIDs(command: name))
        } else if !positionals.isEmpty {
            selection = .named(positionals)
        } else if action == .retry, filter.states.count == 1, filter == OrderFilter(states: filter.states, limit: filter.limit) {
            selection = .state(filter.states[0])
        } else {
            // The filters pick the orders now, from the store (read-only); the action then goes
            // to each, and one that has moved on meanwhile is refused with its new state.
            selection = .many(try environment.readStore().orderIDs(filter))
        }
        let request = ControlRequest(
            operation: ControlRequest.Operation(rawValue: name)!, orders: [], state: nil, note: note,
            resetAttempts: arguments.flag("reset-attempts"), force: arguments.flag("force"), transactionID: arguments.value("transaction-id"))
        let json = arguments.flag("json")

        switch selection {
        case .state(let state):
            var bulk = request
            bulk.state = state
            // A bulk action takes as long as its orders need (batches of 1,000, about a second
            // per 10,000 orders): the answer is waited for.
            if let answer = try environment.askDaemon(bulk, timeout: .seconds(3600)) {
                let outcome = ControlResponse.parseBulk(answer) ?? BulkOutcome(matched: 0)
                return report(outcome, action: action, state: state, json: json, context: context)
            }
            let outcome = try applyWithoutDaemon(bulk, environment: environment)
            let status = report(outcome.bulk, action: action, state: state, json: json, context: context)
            noteWithoutDaemon(outcome.bulk, environment: environment, context: context)
            return status
        case .named(let ids), .many(let ids):
            let many: Bool
            if case .many = selection { many = true } else { many = false }
            var outcome = BulkOutcome(matched: ids.count)
            var all: [OperatorOutcome] = []
            var progress = ProgressLine(label: name, total: many ? ids.count : 0, output: context.output, now: context.now)
            var done = 0
            var daemonAnswered = true
            for start in stride(from: 0, to: ids.count, by: chunkSize) {
                var chunk = request
                chunk.orders = Array(ids[start..<min(start + chunkSize, ids.count)])
                guard let answer = try environment.askDaemon(chunk, timeout: .seconds(30)) else {
                    daemonAnswered = false
                    break
                }
                for result in ControlResponse.parseOutcomes(answer) {
                    outcome.add(result, sampleSize: many ? sampleSize : .max)
                    all.append(result)
                }
                done += chunk.orders.count
                progress.update(done: done)
            }
            progress.finish()
            if !daemonAnswered {
                guard done == 0 else { throw CommandLineError.failure("reconciled stopped answering after \(Number.grouped(done)) of \(Number.grouped(ids.count)) orders; run the command again for the rest") }
                var direct = request
                direct.orders = ids
                let applied = try applyWithoutDaemon(direct, environment: environment)
                outcome = BulkOutcome(matched: ids.count)
                all = applied.all
                for result in all { outcome.add(result, sampleSize: many ? sampleSize : .max) }
            }
            let status =
                json ? reportJSON(outcome, context: context)
                : many ? report(outcome, action: action, state: nil, json: false, context: context)
                : report(all, action: action, bulk: false, context: context)
            if !daemonAnswered { noteWithoutDaemon(outcome, environment: environment, context: context) }
            return status
        }
    }

    /// Order ids from standard input, one per line (blank lines and surrounding blanks ignored).
    static func readOrderIDs(command: String) throws -> [String] {
        let bytes: [UInt8]
        do {
            guard let read = try FileSystem.read(STDIN_FILENO, limit: 64 << 20, path: "standard input") else {
                throw CommandLineError.failure("standard input holds more than 64 MiB of order ids; split the list")
            }
            bytes = read
        } catch let error as CommandLineError {
            throw error
        } catch {
            throw CommandLineError.failure("cannot read the order ids: \(error)")
        }
        var ids: [String] = []
        for (index, line) in String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let id = line.trimmingCharacters(in: .whitespaces)
            guard !id.isEmpty else { continue }
            guard OrderFileParser.isValidOrderID(id) else {
                throw CommandLineError.usage("standard input, line \(index + 1): '\(id.prefix(140))' is not an order id (1–128 of A-Z a-z 0-9 . _ : -); nothing was changed", command: command)
            }
            ids.append(id)
        }
        return ids
    }

    /// Says that no daemon ran, when something changed.
    static func noteWithoutDaemon(_ outcome: BulkOutcome, environment: CommandEnvironment, context: CommandContext) {
        guard outcome.changed > 0 else { return }
        context.output.err(
            environment.isShared
                ? "reconciled is not running here; the change is recorded in the shared store and the running nodes were woken.\n"
                : "reconciled is not running; the change is recorded in the store and picked up at the next start.\n")
    }

    /// `--json`: the counts and each order's result (for a `--state` action, the first of each kind).
    static func reportJSON(_ outcome: BulkOutcome, context: CommandContext) -> Int32 {
        var object = ControlResponse.bulk(outcome)
        object["version"] = .integer(1)
        context.output.out(JSONWriter.string(.object(object)) + "\n")
        return outcome.refused + outcome.notFound == 0 && !outcome.interrupted ? ExitStatus.success : ExitStatus.failure
    }

    /// Without a daemon: the store's owner applies the action, under the daemon's lock.
    static func applyWithoutDaemon(_ request: ControlRequest, environment: CommandEnvironment) throws -> (bulk: BulkOutcome, all: [OperatorOutcome]) {
        if environment.isShared {
            // No local daemon: straight to the shared store, which wakes every node (NOTIFY).
            let store = try environment.sharedStore()
            defer { store.close() }
            guard let operatorRequest = request.operatorRequest(actor: .operator(environment.operatorName)) else { return (BulkOutcome(matched: 0), []) }
            var all: [OperatorOutcome] = []
            let bulk = try store.applyInBatches(
                operatorRequest, verifiers: environment.configuration.verifiers, now: environment.context.now,
                each: { outcome in if request.state == nil { all.append(outcome) } })
            return (bulk, all)
        }
        let path = environment.databasePath
        var info = stat()
        guard stat(path, &info) == 0 else {
            if let problem = PermissionProblem.explain(path, what: "the store") { throw CommandLineError.failure(problem) }
            throw CommandLineError.failure("reconciled is not running and there is no store at \(path)")
        }
        if info.st_uid != geteuid() {
            let owner = UserDatabase.userName(of: info.st_uid) ?? "uid \(info.st_uid)"
            let command = (["reconcilectl"] + CommandLine.arguments.dropFirst()).map(shellQuoted).joined(separator: " ")
            throw CommandLineError.failure(
                "reconciled is not running, and the store \(path) belongs to \(owner); run as its owner:\n  sudo -u \(owner) \(command)")
        }
        let lock: LockFile
        do {
            lock = try LockFile.acquire(path + ".lock", program: "reconcilectl", patience: .seconds(2))
        } catch {
            if case .held(_, let pid, let owner) = error, owner == "reconciled" || owner == nil {
                // A daemon that holds the store but does not answer yet: starting, or migrating.
                let who = "reconciled" + (pid.map { " (pid \($0))" } ?? "")
                throw CommandLineError.failure(
                    "\(who) holds the store but does not answer on \(environment.socketPath) yet (starting or migrating?); try again in a moment")
            }
            throw CommandLineError.failure(error.description)
        }
        defer { withExtendedLifetime(lock) {} }
        let store: SQLiteOrderStore
        do {
            store = try SQLiteOrderStore(path: path, mode: .operatorWrite)
        } catch {
            throw CommandLineError.failure(String(describing: error))
        }
        guard let operatorRequest = request.operatorRequest(actor: .operator(environment.operatorName)) else { return (BulkOutcome(matched: 0), []) }
        var all: [OperatorOutcome] = []
        let bulk = try store.applyInBatches(
            operatorRequest, verifiers: environment.configuration.verifiers, now: environment.context.now,
            each: { outcome in if request.state == nil { all.append(outcome) } })
        return (bulk, all)
    }

    /// A bulk action (`--state`): the orders shown by the daemon (the first of each kind), then
    /// the counts; exit 1 when an order was not changed or a stop cut the action short.
    static func report(_ outcome: BulkOutcome, action: OperatorAction, state: OrderState?, json: Bool, context: CommandContext) -> Int32 {
        if json { return reportJSON(outcome, context: context) }
        _ = report(outcome.examples, action: action, bulk: false, counted: false, context: context)
        let shownChanged = outcome.examples.filter(\.changed).count
        if outcome.changed > shownChanged {
            context.output.out("… and \(Number.grouped(outcome.changed - shownChanged)) more changed\n")
        }
        let shownUnchanged = outcome.examples.count - shownChanged
        if outcome.refused + outcome.notFound > shownUnchanged {
            context.output.err("… and \(Number.grouped(outcome.refused + outcome.notFound - shownUnchanged)) more not changed\n")
        }
        let noun = state.map { "\($0.rawValue) order" } ?? "order"
        var line = "\(Number.grouped(outcome.changed)) of \(Number.grouped(outcome.matched)) \(noun)\(outcome.matched == 1 ? "" : "s") changed"
        if outcome.refused > 0 { line += ", \(Number.grouped(outcome.refused)) refused" }
        if outcome.notFound > 0 { line += ", \(Number.grouped(outcome.notFound)) not found" }
        if outcome.skipped > 0 { line += ", \(Number.grouped(outcome.skipped)) left the state before their turn" }
        context.output.out(line + "\n")
        if outcome.interrupted {
            context.output.err(
                "interrupted: reconciled began stopping; \(Number.grouped(outcome.changed)) of \(Number.grouped(outcome.matched)) orders were changed before the stop and \(Number.grouped(outcome.notReached)) were not reached; run the command again to finish\n")
        }
        return outcome.refused + outcome.notFound == 0 && !outcome.interrupted ? ExitStatus.success : ExitStatus.failure
    }

    /// One line per order, then a count when there were several (`counted`); exit 1 when an
    /// order was not changed.
    static func report(_ outcomes: [OperatorOutcome], action: OperatorAction, bulk: Bool, counted: Bool = true, context: CommandContext) -> Int32 {
        var unchanged = 0
        for outcome in outcomes {
            switch outcome.result {
            case .applied(let from, let to) where action == .retry && from == to && from.isTerminal:
                context.output.out("\(outcome.orderID): \(from); its escalated follow-ups are sent again (due now)\n")
            case .applied(let from, let to):
                let due = (to == .pending || to == .verified) ? " (due now)" : ""
                context.output.out("\(outcome.orderID): \(from) → \(to)\(due)\n")
            case .deferred(let state):
                context.output.out("\(outcome.orderID): \(state); \(action.rawValue) applies when its attempt in flight ends\n")
            case .refused(let reason):
                unchanged += 1
                context.output.err("\(outcome.orderID): \(reason)\n")
            case .notFound:
                unchanged += 1
                context.output.err("\(outcome.orderID): no such order\n")
            }
        }
        let changed = outcomes.count - unchanged
        if counted && (bulk || outcomes.count > 1) {
            context.output.out("\(changed) of \(Plural.count(outcomes.count, "order")) changed\n")
        }
        return unchanged == 0 ? ExitStatus.success : ExitStatus.failure
    }

    static func shellQuoted(_ word: String) -> String {
        word.allSatisfy { $0.isLetter || $0.isNumber || "-_./:=@".contains($0) } ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
