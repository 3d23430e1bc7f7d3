import ReconcileCore
import ReconcileFoundation

/// `reconcilectl reload [--wait]`: the daemon re-reads its configuration. `--wait` (what the
/// unit's `ExecReload=` runs) exits 0 only once the new configuration is active.
enum ReloadCommand {
    static var spec: CommandSpec {
        CommandSpec(
            name: "reload", abstract: "Make reconciled re-read its configuration.",
            usage: "reload [--wait]",
            discussion: """
                With --wait (what the unit's ExecReload= runs), waits for the result: exit 0 when
                the new configuration is active; 78 when the file is invalid (reconcilectl reads it
                first and names the problems; the daemon is not asked); 1 with the reason when the
                daemon kept the old configuration (an unreadable secret, or a change to
                [Spool] Directory=, [State] Database= or [Control] Socket=, which need a restart).
                SIGHUP does the same reload without waiting.
                """,
            options: [OptionSpec(long: "wait", short: "w", valueName: nil, help: "Wait until the reload is done, and fail if it failed.")],
            run: run)
    }

    static func run(_ arguments: ParsedArguments, _ context: CommandContext) throws -> Int32 {
        try ArgumentChecks.noPositionals(arguments, command: "reload")
        let environment = try CommandEnvironment(context)
        let wait = arguments.flag("wait")
        guard let answer = try environment.askDaemon(ControlRequest(operation: .reload, wait: wait), timeout: .seconds(90)) else {
            throw CommandLineError.failure("reconciled is not running (nothing answers on \(environment.socketPath))")
        }
        if wait {
            context.output.out("reloaded: configuration generation \(answer["generation"]?.int64Value ?? 0) is active\n")
        } else {
            context.output.out("reload requested\n")
        }
        return ExitStatus.success
    }
}
