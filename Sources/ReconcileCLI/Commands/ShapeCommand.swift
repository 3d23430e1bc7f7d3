import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl shape`: the orders still in play by age, as Postfix's `qshape` shows a mail
/// queue (DESIGN §10) — where a backlog sits and how old it is, at a glance.
enum ShapeCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "shape", abstract: "Count the orders still in play by age, as Postfix's qshape: by state, product or endpoint.",
            usage: "shape [--by state|product|endpoint] [--json]",
            discussion: """
                Reads the store (read-only; the daemon may run). Counts the orders that are not
                finished, cancelled or revoked, by the time they were received: T is the total,
                then a column per age in minutes — up to 5, 10, 20, 40, 80, 160, 320, 640, 1280 —
                and 1280+ for older ones. The first row sums the others. --by endpoint names
                where each order goes next: delivery for verified orders, googleplay for Google
                Play ones, and the configured verifier's endpoint (production, merchant) for the
                rest.
                """,
            options: [
                OptionSpec(long: "by", short: "b", valueName: "what", help: "state (the default), product or endpoint."),
                OptionSpec(long: "json", short: nil, valueName: nil, help: "Print JSON (see docs/reconcilectl.md, \"JSON output\")."),
            ],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "shape")
        let grouping: QueueShape.Grouping
        if let value = arguments.value("by") {
            guard let parsed = QueueShape.Grouping(rawValue: value) else {
                throw CommandLineError.usage(
                    "'\(value)' is not a grouping; use one of \(QueueShape.Grouping.allCases.map(\.rawValue).joined(separator: ", "))", command: "shape")
            }
            grouping = parsed
        } else {
            grouping = .state
        }
        let environment = try CommandEnvironment(context)
        let verifier: String =
            switch environment.configuration.verifier.kind {
            case .apple, .appstore: VerificationEndpoint.production.rawValue
            case .http: VerificationEndpoint.merchant.rawValue
            }
        let shape = try environment.readStore().shape(by: grouping, now: context.now(), verifierEndpoint: verifier)
        if arguments.flag("json") {
            context.output.out(JSONWriter.string(shape.json) + "\n")
        } else {
            context.output.out(shape.text)
        }
        return ExitStatus.success
    }
}
