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
                usage: "retry (<order-id>... | --state <state>) [--reset-attempts] [--force] [--note <text>]",
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
                    """,
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to retry.")],
                options: [
                    OptionSpec(long: "state", short: "s", valueName: "state", help: "Retry every order in this state instead."),
                    OptionSpec(long: "reset-attempts", short: nil, valueName: nil, help: "Zero the attempts and restart the age clock."),
                    OptionSpec(long: "force", short: "f", valueName: nil, help: "Retry a duplicate_transaction escalation."),
                    OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history."),
                ]) { try run(.retry, $0, $1) },
            CommandSpec(
                name: "hold", abstract: "Keep orders from being attempted until released.",
                usage: "hold <order-id>... [--note <text>]",
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to hold.")],
                options: [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history.")]
            ) { try run(.hold, $0, $1) },
            CommandSpec(
                name: "release", abstract: "Return held orders to the state they were held in.",
                usage: "release <order-id>... [--note <text>]",
                arguments: [ArgumentSpec(name: "order-id", help: "Orders to release.")],
                options: [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the order's history.")]
            ) { try run(.release, $0, $1) },
            CommandSpec(
                name: "resolve", abstract: "Finish an order by hand.",
                usage: "resolve <order-id> --note <text> [--transaction-id <id>]",
                discussion: "The order is recorded as finished by the operator. --transaction-id claims that transaction for it.",
                arguments: [ArgumentSpec(name: "order-id", help: "The order to finish.")],
                options: [
                    OptionSpec(long: "note", short: "m", valueName: "text", help: "Why (required)."),
                    OptionSpec(long: "transaction-id", short: nil, valueName: "id", help: "Claim this transaction for the order."),
                ]
            ) { try run(.resolve, $0, $1) },
            CommandSpec(
                name: "cancel", abstract: "Give up on an order for good.",
                usage: "cancel <order-id> --note <text>",
                arguments: [ArgumentSpec(name: "order-id", help: "The order to cancel.")],
                options: [OptionSpec(long: "note", short: "m", valueName: "text", help: "Why (required).")]
            ) { try run(.cancel, $0, $1) },
        ]
    }

    static func run(_ action: OperatorAction, _ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let name = action.rawValue
        let orders = arguments.positionals
        for id in orders where !OrderFileParser.isValidOrderID(id) {
            throw CommandLineError.usage("'\(id)' is not an order id (1–128 of A-Z a-z 0-9 . _ : -)", command: name)
        }
        let state = try arguments.value("state").map { try ArgumentChecks.state($0, command: name) }
        if state != nil && !orders.isEmpty {
            throw CommandLineError.usage("Give order ids or --state, not both", command: name)
        }
        if state == nil && orders.isEmpty {
            throw CommandLineError.usage(action == .retry ? "Missing expected argument '<order-id>' (or --state)" : "Missing expected argument '<order-id>'", command: name)
        }
        if (action == .resolve || action == .cancel) && orders.count > 1 {
            throw CommandLineError.usage("Unexpected argument '\(orders[1])' (\(name) takes one order)", command: name)
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

        let environment = try CommandEnvironment(context)
        let request = ControlRequest(
            operation: ControlRequest.Operation(rawValue: name)!, orders: orders, state: state, note: note,
            resetAttempts: arguments.flag("reset-attempts"), force: arguments.flag("force"), transactionID: arguments.value("transaction-id"))
        // A bulk action takes as long as its orders need (batches of 1,000, about a second per
        // 10,000 orders): the answer is waited for.
        if let answer = try environment.askDaemon(request, timeout: state != nil ? .seconds(3600) : .seconds(30)) {
            if let bulk = ControlResponse.parseBulk(answer) {
                return report(bulk, action: action, state: state, context: context)
            }
            return report(ControlResponse.parseOutcomes(answer), action: action, bulk: false, context: context)
        }
        let outcome = try applyWithoutDaemon(request, environment: environment)
        let status = state != nil
            ? report(outcome.bulk, action: action, state: state, context: context)
            : report(outcome.all, action: action, bulk: false, context: context)
        if outcome.bulk.changed > 0 {
            context.output.err(
                environment.isShared
                    ? "reconciled is not running here; the change is recorded in the shared store and the running nodes were woken.\n"
                    : "reconciled is not running; the change is recorded in the store and picked up at the next start.\n")
        }
        return status
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
    static func report(_ outcome: BulkOutcome, action: OperatorAction, state: OrderState?, context: CommandContext) -> Int32 {
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
