import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import ReconcilePostgreSQL

/// `reconcilectl status`: is the daemon up, how many orders are where, how are the circuits.
enum StatusCommand {
    /// Exit status when the daemon is not running (as `systemctl status`).
    static let notRunning: Int32 = 3

    static var spec: CommandSpec {
        CommandSpec(
            name: "status", abstract: "Show whether reconciled runs, the orders by state and the circuits.",
            usage: "status [--json] [--watch [--interval <span>]]",
            discussion: """
                Asks the daemon over its control socket; when it is not running, or too busy to
                answer (every connection taken, or no answer within 10 s), reads the store
                instead and says which. Exits 0 when the daemon runs, busy or not, and 3 only
                when it does not. --watch redraws the status on a terminal every 2 s (or
                --interval) until interrupted, as watch(1) would.
                """,
            options: [
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
                OptionSpec(long: "watch", short: "w", valueName: nil, help: "Redraw on a terminal until interrupted (Ctrl-C)."),
                OptionSpec(long: "interval", short: nil, valueName: "span", help: "With --watch: how often (default 2s, at least 100ms)."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "status")
        let interval = try arguments.value("interval").map { text -> Duration in
            guard let span = TimeSpan.parse(text), span >= .milliseconds(100) else {
                throw CommandLineError.usage("Invalid value '\(text)' for '--interval <span>'; use e.g. 500ms, 2s, 1min (at least 100ms)", command: "status")
            }
            return span
        }
        guard arguments.flag("watch") else {
            if interval != nil { throw CommandLineError.usage("'--interval' goes with '--watch'", command: "status") }
            return try once(arguments, context)
        }
        if arguments.flag("json") { throw CommandLineError.usage("'--watch' redraws the text; it does not go with '--json'", command: "status") }
        guard context.output.isTerminal else {
            throw CommandLineError.usage("'--watch' redraws a terminal, and standard output is not one; run 'status' in a loop instead", command: "status")
        }
        let every = interval ?? .seconds(2)
        while true {
            // Each frame is drawn whole, then replaces the previous one: no flicker, no scrolling.
            let frame = CapturedOutput(isTerminal: true)
            var each = context
            each.output = frame
            _ = try once(arguments, each)
            let header = "Every \(TimeSpan.format(every)): reconcilectl status    \(RFC3339.format(context.now()))\n\n"
            context.output.out("\u{1B}[H\u{1B}[2J" + header + frame.standardOutput)
            if !frame.standardError.isEmpty { context.output.err(frame.standardError) }
            Thread.sleep(forTimeInterval: every.inSeconds)
        }
    }

    /// One status, printed once.
    static func once(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        let environment = try CommandEnvironment(context)
        let now = context.now()
        // Busy is not down: something answers on the socket, so the daemon runs.
        var busy: String?
        var daemon: JSONObject?
        do {
            daemon = try environment.askDaemon(ControlRequest(operation: .status), timeout: .seconds(10))?["status"]?.objectValue
        } catch let error as DaemonBusy {
            busy = error.reason
        }
        let running = daemon != nil || busy != nil
        var counts: [String: Int] = [:]
        var oldest: Date?
        var next: Date?
        var outbox = OutboxSummary()
        var unmatched = 0
        var discovered = DiscoverySummary()
        // A shared store: every node, from the daemon's answer or from the store itself.
        var nodes: [NodeStatus]? = daemon.flatMap { $0["nodes"] }.map { StatusNodes.parse($0) }
        if daemon == nil && environment.isShared {
            if let store = try? environment.sharedStore() {
                nodes = try? store.nodes(liveWithin: ClusterTiming(leaseTime: environment.configuration.state.leaseTime).liveWindow)
                store.close()
            }
        }
        if let daemon {
            for member in daemon["counts"]?.objectValue?.members ?? [] { counts[member.key] = Int(member.value.int64Value ?? 0) }
            oldest = daemon["oldest_pending"]?.stringValue.flatMap(RFC3339.parse)
            next = daemon["next_attempt"]?.stringValue.flatMap(RFC3339.parse)
            if let object = daemon["outbox"] { outbox = OrderJSON.outboxSummary(object) }
            unmatched = Int(daemon["notifications"]?["unmatched"]?.int64Value ?? 0)
            discovered = DiscoverySummary(json: daemon["discovered"])
        } else {
            // No daemon: the store tells what it can; if it cannot be read, that is said too.
            do {
                let summary = try environment.readStore().summary()
                for (state, count) in summary.counts { counts[state.rawValue] = count }
                oldest = summary.oldestPendingReceivedAt
                next = summary.nextAttemptAt
                outbox = summary.outbox
                unmatched = summary.unmatchedNotifications
                discovered = summary.discovered
            } catch {
                context.output.err("cannot read the store: \((error as? CommandLineError)?.message ?? String(describing: error))\n")
            }
        }
        if arguments.flag("json") {
            var object = JSONObject(["version": .integer(1), "running": .bool(running)])
            if let busy { object["busy"] = .string(busy) }
            if let info = daemon?["daemon"] { object["daemon"] = info }
            object["counts"] = .object(JSONObject(OrderState.allCases.compactMap { state in
                counts[state.rawValue].map { JSONObject.Member(key: state.rawValue, value: .integer($0)) }
            }))
            object["oldest_pending"] = oldest.map { .string(RFC3339.format($0)) } ?? .null
            object["next_attempt"] = next.map { .string(RFC3339.format($0)) } ?? .null
            object["circuits"] = daemon?["circuits"] ?? .array([])
            object["outbox"] = .object(OrderJSON.outboxSummary(outbox))
            object["notifications"] = .object(JSONObject(["unmatched": .integer(unmatched)]))
            object["discovered"] = .object(discovered.json)
            if let nodes { object["nodes"] = StatusNodes.json(nodes) }
            if let unreachable = daemon?["store_unreachable_since"] { object["store_unreachable_since"] = unreachable }
            context.output.out(JSONWriter.string(.object(object)) + "\n")
            return running ? ExitStatus.success : notRunning
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        var lines: [String] = []
        if let info = daemon?["daemon"]?.objectValue {
            let uptime = TimeSpan.format(.seconds(info["uptime_seconds"]?.int64Value ?? 0))
            lines.append(style.paint("reconciled is running", .green)
                + " (pid \(info["pid"]?.int64Value ?? 0), up \(uptime), configuration generation \(info["generation"]?.int64Value ?? 1))")
            lines.append(row("in flight", String(info["in_flight"]?.int64Value ?? 0)))
        } else if let busy {
            lines.append(style.paint("reconciled is running but busy", .yellow) + ": \(busy); the counts are the store's")
        } else {
            lines.append(style.paint("reconciled is not running", .red) + " (nothing answers on \(environment.socketPath))")
        }
        let shown = OrderState.allCases.compactMap { state in counts[state.rawValue].map { "\(state.rawValue) \(Number.grouped($0))" } }
        lines += wrapped("orders", shown.isEmpty ? ["none"] : shown)
        lines.append(row("oldest pending", oldest.map { RelativeTime.both($0, now: now) } ?? "none"))
        lines.append(row("next attempt", next.map { RelativeTime.due($0, now: now) } ?? "none"))
        if outbox.pending > 0 || outbox.escalated > 0 {
            var text = "\(Number.grouped(outbox.pending)) pending"
            if let oldestAction = outbox.oldestPendingCreatedAt { text += " (oldest \(RelativeTime.describe(oldestAction, now: now)))" }
            if outbox.escalated > 0 { text += " · " + style.paint("\(Number.grouped(outbox.escalated)) escalated", .red) }
            lines.append(row("outbox", text))
        }
        if unmatched > 0 {
            lines.append(row("notifications", style.paint("\(Number.grouped(unmatched)) unmatched", .yellow) + " (reconcilectl notifications --unmatched)"))
        }
        if discovered.waiting > 0 || discovered.noAccount > 0 {
            var parts: [String] = []
            if discovered.waiting > 0 {
                parts.append("\(Number.grouped(discovered.waiting)) waiting for the phone's order"
                    + (discovered.oldestWaitingDiscoveredAt.map { " (oldest \(RelativeTime.describe($0, now: now)))" } ?? ""))
            }
            if discovered.noAccount > 0 { parts.append(style.paint("\(Number.grouped(discovered.noAccount)) no_account", .yellow)) }
            lines.append(row("discovered", parts.joined(separator: " · ") + " (reconcilectl discovered)"))
        }
        if let circuits = daemon?["circuits"]?.arrayValue, !circuits.isEmpty {
            let text = circuits.compactMap { value -> String? in
                guard let circuit = value.objectValue, let endpoint = circuit["endpoint"]?.stringValue, let state = circuit["state"]?.stringValue else { return nil }
                var part = "\(endpoint) \(state == "closed" ? state : style.paint(state, .red))"
                if state != "closed", let reason = circuit["reason"]?.stringValue { part += " (\(reason))" }
                // Failing, its circuit not open yet: with few orders and long backoff that can
                // take hours, and the endpoint is down all the same.
                if state == "closed", let failures = circuit["consecutive_failures"]?.int64Value, failures > 0 {
                    part += ", " + style.paint("failing", .yellow) + ": \(Plural.count(Int(failures), "attempt")) in a row"
                        + (circuit["last_failure"]?.stringValue.map { " (\($0))" } ?? "")
                }
                if state == "open", let until = circuit["open_until"]?.stringValue.flatMap(RFC3339.parse) {
                    part += " until \(RFC3339.format(until)) (\(RelativeTime.describe(until, now: now)))"
                }
                return part
            }.joined(separator: " · ")
            lines.append(row("circuits", text))
            // After a 429 an endpoint is sent nothing until its Retry-After (capped at
            // CircuitMaxCooldown), whatever its circuit says.
            let pauses = circuits.compactMap { value -> String? in
                guard let circuit = value.objectValue, let endpoint = circuit["endpoint"]?.stringValue,
                    let until = circuit["paused_until"]?.stringValue.flatMap(RFC3339.parse), until > now
                else { return nil }
                return "\(endpoint) until \(RelativeTime.both(until, now: now)) (429)"
            }
            if !pauses.isEmpty { lines += wrapped("paused", pauses) }
        }
        if let since = daemon?["store_unreachable_since"]?.stringValue.flatMap(RFC3339.parse) {
            lines.append(row("store", style.paint("unreachable", .red) + " since \(RelativeTime.both(since, now: now)); retrying"))
        }
        if let nodes {
            lines.append(row("nodes", nodes.isEmpty ? "none yet" : "\(nodes.filter(\.live).count) live of \(nodes.count)"))
            for node in nodes {
                let state = node.live ? style.paint("live", .green) : style.paint(node.inFlight == 0 && node.leases == 0 ? "gone" : "silent", .red)
                var text = "\(node.name) \(state), heartbeat \(RelativeTime.both(node.lastHeartbeat, now: now)), in flight \(node.inFlight), leases \(node.leases)"
                let open = node.circuits.filter { $0.value != "closed" }.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                if !open.isEmpty { text += ", circuits " + open.joined(separator: " ") }
                lines.append(row("", text))
            }
        }
        context.output.out(lines.joined(separator: "\n") + "\n")
        return running ? ExitStatus.success : notRunning
    }

    static func row(_ label: String, _ value: String) -> String {
        "  " + label.padding(toLength: 15, withPad: " ", startingAt: 0) + value
    }

    /// A labelled list of `parts` joined by " · ", wrapped at 80 columns under its first part.
    static func wrapped(_ label: String, _ parts: [String]) -> [String] {
        var lines: [String] = []
        var current = ""
        for part in parts {
            let candidate = current.isEmpty ? part : current + " · " + part
            if 17 + candidate.count > 80 && !current.isEmpty {
                lines.append(current + " ·")
                current = part
            } else {
                current = candidate
            }
        }
        lines.append(current)
        return lines.enumerated().map { index, text in index == 0 ? row(label, text) : row("", text) }
    }
}
