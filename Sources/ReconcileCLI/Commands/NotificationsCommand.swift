import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl notifications`: the store notifications taken in (DESIGN §5a, §10), newest
/// first — what each said and what became of it.
enum NotificationsCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "notifications", abstract: "List the store notifications taken in (refunds, revocations), newest first.",
            usage: "notifications [--unmatched] [--limit <n>] [--json]",
            discussion: """
                Reads the store (read-only; the daemon may run). Each notification was verified
                before it was taken in; its signed payload is never kept. OUTCOME says what it
                did: applied (the order moved), no_change, waiting (the order's attempt was in
                flight), recorded (a type that changes no order), unmatched (no order holds its
                transaction). --unmatched lists only those.
                """,
            options: [
                OptionSpec(long: "unmatched", short: nil, valueName: nil, help: "Only notifications no order holds the transaction of."),
                OptionSpec(long: "limit", short: "n", valueName: "n", help: "Show at most this many (default 100)."),
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "notifications")
        let limit = try ArgumentChecks.limit(arguments, command: "notifications")
        let environment = try CommandEnvironment(context)
        let notifications = try environment.readStore().notifications(unmatchedOnly: arguments.flag("unmatched"), limit: limit)
        if arguments.flag("json") {
            let list = JSONValue.array(notifications.map { .object(OrderJSON.notification($0)) })
            context.output.out(JSONWriter.string(.object(JSONObject(["version": .integer(1), "notifications": list]))) + "\n")
            return ExitStatus.success
        }
        guard !notifications.isEmpty else {
            context.output.out(arguments.flag("unmatched") ? "no unmatched notifications\n" : "no store notifications taken in\n")
            return ExitStatus.success
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        context.output.out(table(notifications, showOrder: true).render(style: style))
        return ExitStatus.success
    }

    /// The notifications as a table (`show` leaves the order out: it is the one shown).
    static func table(_ notifications: [StoredNotification], showOrder: Bool) -> TextTable {
        var columns: [TextTable.Column] = [
            .init(title: "RECEIVED", maximum: 20), .init(title: "STORE", maximum: 11), .init(title: "TYPE", maximum: 20),
            .init(title: "TRANSACTION", maximum: 20),
        ]
        if showOrder { columns.append(.init(title: "ORDER", maximum: 20)) }
        columns.append(.init(title: "OUTCOME", maximum: 10))
        columns.append(.init(title: "REVOKED AT", maximum: 20, flexible: true))
        var table = TextTable(columns)
        for stored in notifications {
            let notification = stored.notification
            var row = [
                RFC3339.format(stored.receivedAt), notification.source.rawValue, notification.type,
                NotificationMatching.transactionID(of: notification) ?? "-",
            ]
            if showOrder { row.append(stored.orderID ?? "-") }
            row.append(stored.outcome)
            row.append(notification.revokedAt.map(RFC3339.format) ?? "")
            table.add(row)
        }
        return table
    }
}
