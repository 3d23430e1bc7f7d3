import Foundation
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl show ORDER_ID`: everything about one order, and its whole history.
enum ShowCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "show", abstract: "Show an order: its fields, next attempt and whole history.",
            usage: "show <order-id> [--json]",
            discussion: "Receipts and purchase tokens are shown as their length and a short SHA-256, never in full. Its outbox actions and the store's notifications about it follow its history.",
            arguments: [ArgumentSpec(name: "order-id", help: "The merchant's order id.")],
            options: [OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\").")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let orderID = try ArgumentChecks.onePositional(arguments, name: "order-id", command: "show")
        let environment = try CommandEnvironment(context)
        let store = try environment.readStore()
        guard let order = try store.order(id: orderID) else {
            throw CommandLineError.failure("no order \(orderID) in \(store.location)")
        }
        let history = try store.history(orderID: orderID)
        let actions = try store.actions(orderID: orderID)
        let notifications = try store.notifications(orderID: orderID)
        // An order a store's report or recover made names the phone's order that came late for it.
        let samePurchase = order.origin != nil ? try store.samePurchaseOrders(as: orderID) : []
        if arguments.flag("json") {
            var object = OrderJSON.detail(order, history: history, actions: actions, notifications: notifications)
            if order.origin != nil { object["same_purchase_orders"] = .array(samePurchase.map(JSONValue.string)) }
            context.output.out(JSONWriter.string(.object(object)) + "\n")
            return ExitStatus.success
        }
        let now = context.now()
        let style = TerminalStyle(output: context.output, environment: context.environment)
        var lines = ["Order \(style.bold(order.orderID))"]
        func field(_ label: String, _ value: String?) {
            guard let value, !value.isEmpty else { return }
            lines.append("  " + label.padding(toLength: 15, withPad: " ", startingAt: 0) + value)
        }
        let state = style.paint(order.state.rawValue, TerminalStyle.colour(of: order.state.rawValue) ?? .dim)
        field("state", "\(state) — \(order.state.meaning)\(order.reason.map { " (\($0))" } ?? "")")
        if order.state == .held, let resume = order.resumeState { field("held from", resume.rawValue) }
        field("product", order.productID)
        if let receipt = order.proof.receipt {
            field("receipt", "\(Number.grouped(receipt.utf8.count)) bytes, sha256 \(SHA256.fingerprint(receipt))")
        } else if order.prunedAt != nil {
            field("receipt", "pruned \(RelativeTime.describe(order.prunedAt!, now: now)) (KeepFinished=)")
        }
        if let signed = order.proof.signedTransaction {
            field("signed", "\(Number.grouped(signed.utf8.count)) bytes, sha256 \(SHA256.fingerprint(signed))")
        }
        field("transaction", order.proof.transactionID.map { "\($0) (from the order)" })
        if let token = order.proof.purchaseToken {
            field("purchase token", "\(Number.grouped(token.utf8.count)) bytes, sha256 \(SHA256.fingerprint(token)) (Google Play)")
        }
        field("package", order.proof.packageName)
        field("user", [order.userID, order.applicationUsername.map { "application username \($0)" }].compactMap { $0 }.joined(separator: " · "))
        if let amount = order.amount { field("amount", [amount, order.currency].compactMap { $0 }.joined(separator: " ")) }
        field("created", order.createdAt.map { RelativeTime.both($0, now: now) })
        field("received", RelativeTime.both(order.receivedAt, now: now))
        field("updated", RelativeTime.both(order.updatedAt, now: now))
        field("attempts", "\(order.attempts) verification, \(order.deliveryAttempts) delivery")
        if let next = order.nextAttemptAt {
            field("next attempt", RelativeTime.due(next, now: now))
        } else if order.leaseOwner != nil {
            field("next attempt", "in flight now (lease held by \(order.leaseOwner!))")
        } else {
            field("next attempt", "none (\(order.state.rawValue))")
        }
        field("verified", order.verifiedTransactionID.map { "transaction \($0)\(order.environment.map { ", \($0)" } ?? "")" })
        field("finished by", order.finishedBy?.rawValue)
        field("origin", order.origin.map { origin in
            switch origin {
            case .store: "store (a purchase the store reported, made an order after its grace)"
            case .operator: "operator (reconcilectl recover)"
            }
        })
        field("same purchase", samePurchase.isEmpty ? nil : samePurchase.joined(separator: ", ") + " (the phone's order, late: finished same_purchase_as this one)")
        lines.append("")
        lines.append(style.bold("History"))
        var table = TextTable([
            .init(title: "TIME", maximum: 20), .init(title: "ACTOR", maximum: 16), .init(title: "TRANSITION", maximum: 21),
            .init(title: "REASON / ANSWER", maximum: 200, flexible: true),
        ])
        table.width = 200  // history lines carry their full reason; terminals wrap
        for record in history {
            var answer = record.reason.rawValue
            var parts: [String] = []
            if let status = record.verifierStatus { parts.append("status \(status)") }
            if let http = record.httpStatus { parts.append("HTTP \(http)") }
            if let environment = record.environment { parts.append(environment) }
            if let endpoint = record.endpoint { parts.append(endpoint) }
            if let latency = record.latencyMilliseconds { parts.append("\(latency) ms") }
            if !parts.isEmpty { answer += " (" + parts.joined(separator: ", ") + ")" }
            if let detail = record.detail { answer += ": " + detail }
            table.add([
                RFC3339.format(record.at), record.actor.description,
                "\(record.from?.rawValue ?? "–") → \(record.to.rawValue)", answer,
            ])
        }
        var text = lines.joined(separator: "\n") + "\n" + table.render(style: style)
        if !actions.isEmpty {
            var outbox = TextTable([
                .init(title: "ACTION", maximum: 18), .init(title: "STATE", maximum: 9), .init(title: "ATT", maximum: 4, alignRight: true),
                .init(title: "NEXT", maximum: 20), .init(title: "REASON", maximum: 200, flexible: true),
            ])
            outbox.width = 200
            for action in actions {
                let next = action.nextAttemptAt.map { RelativeTime.both($0, now: now) }
                    ?? (action.lease != nil ? "in flight" : "-")
                var reason = action.reason?.rawValue ?? ""
                if let detail = action.detail { reason += ": " + detail }
                if let deadline = action.deadline, action.state == .pending { reason += " (deadline \(RFC3339.format(deadline)))" }
                outbox.add([action.kind.rawValue, action.state.rawValue, String(action.attempts), next, reason])
            }
            text += "\n" + style.bold("Outbox") + "\n" + outbox.render(style: style)
        }
        if !notifications.isEmpty {
            text += "\n" + style.bold("Store notifications") + "\n" + NotificationsCommand.table(notifications, showOrder: false).render(style: style)
        }
        context.output.out(text)
        return ExitStatus.success
    }
}
