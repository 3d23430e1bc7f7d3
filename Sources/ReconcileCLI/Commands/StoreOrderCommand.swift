import Foundation
import ReconcileCore
import ReconcileFoundation

/// `reconcilectl lookup` and `recover` (DESIGN §5b, §10): what the store says of a customer's
/// order id (the one on the store's e-mail receipt), and orders for its purchases that no stored
/// order holds. Both go through the running daemon, which holds the store credentials — the CLI
/// never reads a key — and logs them with the operator's name.
enum StoreOrderCommand {
    static var specs: [CommandSpec] {
        [
            CommandSpec(
                name: "lookup", abstract: "Ask the store about a customer's order id, and which stored order holds each purchase.",
                usage: "lookup <store-order-id> [--package <name>] [--json]",
                discussion: """
                    The id is the one on the customer's e-mail receipt from the store: the App
                    Store's MK5TTV4XYZ (asked with Look Up Order ID, in production only; needs
                    [Verifier] Kind=appstore), Google Play's GPA.1234-5678-9012-34567 (asked with
                    orders.get, then purchases.products.get; needs [GooglePlay]). The running
                    daemon asks, with its credentials, at its verifier's rate; it verifies what the
                    store signed. Each purchase is printed with its product, when it was bought,
                    its state (purchased, refunded, pending, cancelled…) and the stored order that
                    holds it, or - for none: that one is what recover would make an order of.
                    """,
                arguments: [ArgumentSpec(name: "store-order-id", help: "The order id from the store's receipt.")],
                options: [
                    OptionSpec(long: "package", short: "p", valueName: "name", help: "The Play app, when [GooglePlay] PackageName= names several."),
                    OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
                ]) { try run(.lookup, $0, $1) },
            CommandSpec(
                name: "recover", abstract: "Make orders for a customer's store order's purchases that no stored order holds.",
                usage: "recover <store-order-id> [--user <id>] [--package <name>] [--note <text>] [--json]",
                discussion: """
                    Asks the store as lookup does, then makes an order (origin operator, at once)
                    for each purchase no stored order holds, granted to the account the app set
                    at purchase or to --user; it is verified and delivered as any order. It
                    leaves, and says why, purchases an order holds already (so running it twice
                    makes nothing new), refunded, voided, pending or cancelled ones,
                    subscriptions, and ones with no account when --user is not given. Exit 0
                    when every purchase has an order now (made this time or before), 1 when one
                    was left for another reason.
                    """,
                arguments: [ArgumentSpec(name: "store-order-id", help: "The order id from the store's receipt.")],
                options: [
                    OptionSpec(long: "user", short: "u", valueName: "id", help: "Grant the purchases to this account (application_username)."),
                    OptionSpec(long: "package", short: "p", valueName: "name", help: "The Play app, when [GooglePlay] PackageName= names several."),
                    OptionSpec(long: "note", short: "m", valueName: "text", help: "Why, for the journal (a ticket number, say)."),
                    OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
                ]) { try run(.recover, $0, $1) },
        ]
    }

    static func run(_ operation: ControlRequest.Operation, _ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let name = operation.rawValue
        guard let text = arguments.positionals.first else {
            throw CommandLineError.usage("Missing expected argument '<store-order-id>'", command: name)
        }
        guard arguments.positionals.count == 1 else {
            throw CommandLineError.usage("Unexpected argument '\(arguments.positionals[1])' (\(name) takes one store order id)", command: name)
        }
        let id: StoreOrderID
        do {
            id = try StoreOrderID.parse(text)
        } catch {
            throw CommandLineError.usage(error.description.prefix(1).uppercased() + error.description.dropFirst(), command: name)
        }
        let package = arguments.value("package")
        if let package {
            if case .appStore = id { throw CommandLineError.usage("'--package' is for Google Play order ids (GPA.…) only", command: name) }
            if let problem = AndroidPackageName.problem(package) { throw CommandLineError.usage("'--package' \(problem)", command: name) }
        }
        let user = arguments.value("user")
        if let user {
            guard !user.isEmpty, ControlRequest.isValidNote(user), user.utf8.count <= OrderFileParser.textFieldMaximumLength else {
                throw CommandLineError.usage("'--user' must be one line of printable text of at most 255 bytes", command: name)
            }
        }
        let note = arguments.value("note")
        if let note, !ControlRequest.isValidNote(note) {
            throw CommandLineError.usage("'--note' must be one line of printable text of at most 1000 bytes", command: name)
        }
        var request = ControlRequest(operation: operation, note: note)
        request.storeOrderID = id
        request.package = package
        request.user = user
        let environment = try CommandEnvironment(context)
        // The store may be slow; the daemon's own time-outs (the verifier's Timeout=) bound it.
        guard let answer = try environment.askDaemon(request, timeout: .seconds(120)) else {
            throw CommandLineError.failure(
                "reconciled is not running (nothing answers on \(environment.socketPath)); \(name) asks the store through the daemon, which holds the credentials")
        }
        guard case .object(let result)? = answer[name], case .array(let purchases)? = result["purchases"] else {
            throw CommandLineError.failure("reconciled answered without the \(name) result")
        }
        if arguments.flag("json") {
            var object = JSONObject(["version": .integer(1)])
            for member in result.members { object[member.key] = member.value }
            context.output.out(JSONWriter.string(.object(object)) + "\n")
        } else {
            let style = TerminalStyle(output: context.output, environment: context.environment)
            context.output.out(render(purchases.compactMap(\.objectValue), id: id, recovering: operation == .recover, now: context.now(), style: style))
        }
        guard operation == .recover else { return ExitStatus.success }
        // Done: every purchase has an order now, made this time or before.
        let done = purchases.allSatisfy { $0.objectValue?["made"]?.stringValue != nil || $0.objectValue?["left"]?.stringValue == "held" }
        return done ? ExitStatus.success : ExitStatus.failure
    }

    /// The purchases as a table, then (`recover`) one line for each purchase: what was made, or
    /// what was left and why.
    static func render(_ purchases: [JSONObject], id: StoreOrderID, recovering: Bool, now: Date, style: TerminalStyle) -> String {
        let storeName = id.store == .appStore ? "App Store" : "Google Play"
        var text = "\(storeName) order \(id.id): \(Plural.count(purchases.count, "purchase"))\n"
        guard !purchases.isEmpty else { return text }
        var table = TextTable([
            .init(title: "TRANSACTION", maximum: 24), .init(title: "PRODUCT", maximum: 18), .init(title: "PURCHASED", maximum: 10),
            .init(title: "STATE", maximum: 18), .init(title: "HELD BY", maximum: 24, flexible: true),
        ])
        func time(_ key: String, _ object: JSONObject) -> String {
            object[key]?.stringValue.flatMap(RFC3339.parse).map { RelativeTime.age($0, now: now) } ?? "-"
        }
        for purchase in purchases {
            var state = purchase["state"]?.stringValue ?? "-"
            if purchase["kind"]?.stringValue == "subscription" { state += " (sub)" }
            if purchase["test"]?.boolValue == true { state += " (test)" }
            if purchase["refunded_at"]?.stringValue != nil { state += " " + time("refunded_at", purchase) }
            table.add([
                purchase["transaction"]?.stringValue ?? "-", purchase["product_id"]?.stringValue ?? "-", time("purchased_at", purchase), state,
                purchase["held_by"]?.stringValue ?? "-",
            ])
        }
        text += table.render(style: style)
        guard recovering else { return text }
        for purchase in purchases {
            let transaction = purchase["transaction"]?.stringValue ?? "?"
            if let made = purchase["made"]?.stringValue {
                text += "made order \(made) for \(transaction)\n"
            } else {
                text += "left \(transaction): \(purchase["why"]?.stringValue ?? "-")\n"
            }
        }
        return text
    }
}
