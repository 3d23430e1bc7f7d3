import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl discovered`: the purchases the stores reported on their own (DESIGN §5b,
/// §10), newest first — each with where it stands: waiting for the phone's order, joined to
/// one, made an order, recorded, or left for a person.
enum DiscoveredCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "discovered", abstract: "List the purchases the stores reported that no phone order carried, newest first.",
            usage: "discovered [--limit <n>] [--json]",
            discussion: """
                Reads the store (read-only; the daemon may run). A store reports a purchase on
                its own (an App Store ONE_TIME_CHARGE); it is verified before it is kept, and
                its signed transaction is never printed. STATUS says where it stands: waiting
                (for the phone's order, until the time shown), joined (an order holds it),
                became_order (it became ORDER), recorded ([Discovery] Mode=record), no_account
                (the app set no account: a person decides), ignored_product (Products= does
                not admit it), ignored_subscription, ignored_revoked.
                """,
            options: [
                OptionSpec(long: "limit", short: "n", valueName: "n", help: "Show at most this many (default 100)."),
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "discovered")
        let limit = try ArgumentChecks.limit(arguments, command: "discovered")
        let environment = try CommandEnvironment(context)
        let purchases = try environment.readStore().discoveredPurchases(limit: limit)
        if arguments.flag("json") {
            let list = JSONValue.array(purchases.map { .object(OrderJSON.discovered($0)) })
            context.output.out(JSONWriter.string(.object(JSONObject(["version": .integer(1), "discovered": list]))) + "\n")
            return ExitStatus.success
        }
        guard !purchases.isEmpty else {
            context.output.out("no purchases discovered\n")
            return ExitStatus.success
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        context.output.out(table(purchases, now: context.now()).render(style: style))
        return ExitStatus.success
    }

    /// The purchases as a table: ages and grace ends relative to `now`, as `list` prints times.
    static func table(_ purchases: [StoredDiscoveredPurchase], now: Date) -> TextTable {
        var table = TextTable([
            .init(title: "DISCOVERED", maximum: 10), .init(title: "STORE", maximum: 11), .init(title: "TRANSACTION", maximum: 20),
            .init(title: "PRODUCT", maximum: 16), .init(title: "STATUS", maximum: 15), .init(title: "ORDER / UNTIL", maximum: 20, flexible: true),
        ])
        for stored in purchases {
            let purchase = stored.purchase
            var last = stored.status.orderID ?? ""
            if case .waiting(let until) = stored.status { last = RelativeTime.describe(until, now: now) }
            table.add([
                RelativeTime.age(stored.discoveredAt, now: now), purchase.store.rawValue, purchase.transactionKey, purchase.productID,
                stored.status.code, last,
            ])
        }
        return table
    }
}
