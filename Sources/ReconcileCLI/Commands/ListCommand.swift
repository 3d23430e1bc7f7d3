import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl list`: orders, filtered, soonest next attempt first.
enum ListCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "list", abstract: "List orders, soonest next attempt first.",
            usage: "list [--state <state>]... [--product <id>] [--reason <code>] [--store <store>] [--older-than <span>] [--limit <n>] [--json] | --actions-due [--json]",
            discussion: """
                Reads the store (read-only; the daemon may run). States: waiting, pending,
                verifying, verified, finished, rejected, escalated, held, cancelled, expired,
                revoked.
                Stores: app_store, google_play (orders with a purchase token).
                --actions-due lists the outbox actions still owed (a Google Play
                acknowledgement, for example), soonest next attempt first.
                """,
            options: OrderFilterOptions.options + [
                OptionSpec(long: "actions-due", short: nil, valueName: nil, help: "List the outbox actions still owed instead of orders."),
                OptionSpec(long: "limit", short: "n", valueName: "n", help: "Show at most this many (default 100)."),
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "list")
        if arguments.flag("actions-due") {
            for option in OrderFilterOptions.names where !arguments.allValues(option).isEmpty {
                throw CommandLineError.usage("'--\(option)' does not apply to '--actions-due'", command: "list")
            }
            return try actions(arguments, context)
        }
        let filter = try OrderFilterOptions.filter(
            arguments, command: "list", now: context.now(), limit: try ArgumentChecks.limit(arguments, command: "list", fallback: 100))
        let environment = try CommandEnvironment(context)
        let (orders, total) = try environment.readStore().list(filter)
        let now = context.now()
        if arguments.flag("json") {
            let list = JSONValue.array(orders.map { .object(OrderJSON.summary($0)) })
            context.output.out(JSONWriter.string(.object(JSONObject(["version": .integer(1), "orders": list]))) + "\n")
            return ExitStatus.success
        }
        guard !orders.isEmpty else {
            context.output.out("no orders match\n")
            return ExitStatus.success
        }
        var table = TextTable([
            .init(title: "ORDER", maximum: 20), .init(title: "STATE", maximum: 9), .init(title: "PRODUCT", maximum: 20),
            .init(title: "ATT", maximum: 4, alignRight: true), .init(title: "NEXT", maximum: 8), .init(title: "AGE", maximum: 5),
            .init(title: "REASON", maximum: 40, flexible: true),
        ])
        for order in orders {
            table.add([
                order.orderID, order.state.rawValue, order.productID, String(order.attempts),
                order.nextAttemptAt.map { RelativeTime.describe($0, now: now) } ?? "-", RelativeTime.age(order.receivedAt, now: now),
                order.reason?.rawValue ?? "",
            ])
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        var text = table.render(style: style, colours: [1: TerminalStyle.colour(of:)])
        if total > orders.count {
            text += "(showing \(Number.grouped(orders.count)) of \(Number.grouped(total)); use --limit to see more)\n"
        }
        context.output.out(text)
        return ExitStatus.success
    }

    /// `list --actions-due`: the outbox actions still owed, soonest first.
    static func actions(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let limit = try ArgumentChecks.limit(arguments, command: "list")
        let environment = try CommandEnvironment(context)
        let actions = try environment.readStore().pendingActions(dueBy: nil, limit: limit)
        let now = context.now()
        if arguments.flag("json") {
            let list = JSONValue.array(actions.map { .object(OrderJSON.action($0)) })
            context.output.out(JSONWriter.string(.object(JSONObject(["version": .integer(1), "actions": list]))) + "\n")
            return ExitStatus.success
        }
        guard !actions.isEmpty else {
            context.output.out("no outbox actions are owed\n")
            return ExitStatus.success
        }
        var table = TextTable([
            .init(title: "ORDER", maximum: 20), .init(title: "ACTION", maximum: 16), .init(title: "ATT", maximum: 4, alignRight: true),
            .init(title: "NEXT", maximum: 8), .init(title: "DEADLINE", maximum: 8), .init(title: "REASON", maximum: 40, flexible: true),
        ])
        for action in actions {
            table.add([
                action.orderID, action.kind.rawValue, String(action.attempts),
                action.nextAttemptAt.map { RelativeTime.describe($0, now: now) } ?? "now",
                action.deadline.map { RelativeTime.describe($0, now: now) } ?? "-", action.reason?.rawValue ?? "",
            ])
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        context.output.out(table.render(style: style))
        return ExitStatus.success
    }
}
