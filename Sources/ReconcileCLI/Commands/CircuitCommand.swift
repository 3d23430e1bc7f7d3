import Foundation
import ReconcileCore
import ReconcileFoundation

/// `reconcilectl circuit [ENDPOINT] [--probe-now | --close] [--json]` (DESIGN §10): the running
/// daemon's circuits — state, failures in a row, openings, the next probe, the reason — and an
/// operator's hand on one: end its cool-down now, or close it.
enum CircuitCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "circuit", abstract: "Show the daemon's circuits, or steer one: probe it now, or close it.",
            usage: "circuit [<endpoint>] [--probe-now | --close] [--json]",
            discussion: """
                Circuits live in the running daemon (they start closed). Without an option: each
                endpoint's circuit, its failures in a row, how often it opened, when an open one
                sends its probe and why it opened. --probe-now ends an open circuit's cool-down:
                the probe goes at once (after fixing the endpoint). --close closes it: requests go
                at once and the failure count starts again. Both name the endpoint and are logged
                with the operator. Endpoints: production, sandbox, merchant, delivery,
                revocation, googleplay, googleplay-token.
                """,
            arguments: [ArgumentSpec(name: "endpoint", help: "The endpoint (all when omitted).")],
            options: [
                OptionSpec(long: "probe-now", short: nil, valueName: nil, help: "End an open circuit's cool-down: its probe goes now."),
                OptionSpec(long: "close", short: nil, valueName: nil, help: "Close the circuit: requests go at once."),
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        guard arguments.positionals.count <= 1 else {
            throw CommandLineError.usage("Unexpected argument '\(arguments.positionals[1])'", command: "circuit")
        }
        let endpoint = try arguments.positionals.first.map { name -> VerificationEndpoint in
            guard let endpoint = VerificationEndpoint(rawValue: name) else {
                var message = "'\(name)' is not an endpoint; use one of \(VerificationEndpoint.allCases.map(\.rawValue).joined(separator: ", "))"
                if let suggestion = Spelling.closest(to: name, in: VerificationEndpoint.allCases.map(\.rawValue)) { message += " (did you mean '\(suggestion)'?)" }
                throw CommandLineError.usage(message, command: "circuit")
            }
            return endpoint
        }
        if arguments.flag("probe-now") && arguments.flag("close") {
            throw CommandLineError.usage("Give '--probe-now' or '--close', not both", command: "circuit")
        }
        let action: CircuitAction? = arguments.flag("probe-now") ? .probeNow : arguments.flag("close") ? .close : nil
        let environment = try CommandEnvironment(context)
        let notRunning = CommandLineError.failure(
            "reconciled is not running (nothing answers on \(environment.socketPath)); circuits live in the running daemon and start closed")

        if let action {
            guard let endpoint else { throw CommandLineError.usage("'--\(action.rawValue)' needs the endpoint", command: "circuit") }
            var request = ControlRequest(operation: .circuit)
            request.endpoint = endpoint
            request.circuitAction = action
            guard let answer = try environment.askDaemon(request) else { throw notRunning }
            let state = answer["state"]?.stringValue ?? "?"
            let changed = answer["changed"]?.boolValue ?? false
            if arguments.flag("json") {
                context.output.out(JSONWriter.string(.object(JSONObject([
                    "version": .integer(1), "endpoint": .string(endpoint.rawValue), "state": .string(state), "changed": .bool(changed),
                ]))) + "\n")
                return ExitStatus.success
            }
            let text = switch (action, changed) {
            case (.probeNow, true): "\(endpoint.rawValue): the cool-down is over; the probe goes now"
            case (.probeNow, false): "\(endpoint.rawValue): \(state), nothing to cut short (only an open circuit waits)"
            case (.close, true): "\(endpoint.rawValue): closed; requests go at once"
            case (.close, false): "\(endpoint.rawValue): already closed; its failure count starts again"
            }
            context.output.out(text + "\n")
            return ExitStatus.success
        }

        guard let status = try environment.askDaemon(ControlRequest(operation: .status), timeout: .seconds(10))?["status"]?.objectValue else {
            throw notRunning
        }
        var circuits = (status["circuits"]?.arrayValue ?? []).compactMap(\.objectValue)
        if let endpoint {
            circuits = circuits.filter { $0["endpoint"]?.stringValue == endpoint.rawValue }
            guard !circuits.isEmpty else { throw CommandLineError.failure("this daemon does not talk to \(endpoint.rawValue)") }
        }
        if arguments.flag("json") {
            context.output.out(JSONWriter.string(.object(JSONObject(["version": .integer(1), "circuits": .array(circuits.map(JSONValue.object))]))) + "\n")
            return ExitStatus.success
        }
        let now = context.now()
        var table = TextTable([
            .init(title: "ENDPOINT", maximum: 16), .init(title: "STATE", maximum: 9), .init(title: "FAILS", maximum: 6, alignRight: true),
            .init(title: "OPENED", maximum: 6, alignRight: true), .init(title: "PROBE", maximum: 8), .init(title: "REASON", maximum: 40, flexible: true),
        ])
        for circuit in circuits {
            let state = circuit["state"]?.stringValue ?? "?"
            let probe = circuit["open_until"]?.stringValue.flatMap(RFC3339.parse).map { RelativeTime.describe($0, now: now) } ?? "-"
            let reason = state == "closed" ? circuit["last_failure"]?.stringValue : circuit["reason"]?.stringValue
            table.add([
                circuit["endpoint"]?.stringValue ?? "?", state, String(circuit["consecutive_failures"]?.int64Value ?? 0),
                String(circuit["openings"]?.int64Value ?? 0), probe, reason ?? "",
            ])
        }
        let style = TerminalStyle(output: context.output, environment: context.environment)
        context.output.out(table.render(style: style, colours: [1: { $0 == "closed" ? .green : .red }]))
        return ExitStatus.success
    }
}
