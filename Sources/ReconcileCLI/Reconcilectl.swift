import Foundation
import ReconcileCore
import ReconcileFoundation

/// `reconcilectl`: the operator's command line (DESIGN §10). Parses the global options and the
/// verb, prints help the way swift-argument-parser does, and maps failures to exit statuses:
/// 0 success, 1 runtime failure, 64 usage error, 78 bad configuration.
public enum Reconcilectl {
    /// Runs one invocation; returns the exit status.
    public static func main(
        arguments: [String], environment: [String: String], output: any CommandOutput = StandardOutput(),
        now: @escaping () -> Date = Date.init
    ) -> Int32 {
        let sink = output
        var context = CommandContext(output: output, environment: environment, configPath: nil, now: now)
        if arguments.first == CompletionCommand.name {
            return CompletionCommand.run(Array(arguments.dropFirst()), context: context)
        }
        do {
            return try dispatch(arguments, context: &context)
        } catch let error as CommandLineError {
            switch error {
            case .usage(let message, let name):
                let command = name.flatMap { name in commands.first { $0.name == name } }
                sink.err("Error: \(message)\n")
                sink.err("Usage: reconcilectl \(command?.usage ?? rootUsage)\n")
                sink.err("  See 'reconcilectl \(command.map { "\($0.name) " } ?? "")--help' for more information.\n")
                return ExitStatus.usage
            case .failure(let message, let status):
                sink.err("Error: \(message)\n")
                return status
            }
        } catch {
            sink.err("Error: \(error)\n")
            return ExitStatus.failure
        }
    }

    static let rootUsage = "[--config <path>] <subcommand>"

    /// Every verb, in the order help lists them.
    static var commands: [CommandSpec] {
        [StatusCommand.spec, ListCommand.spec, ShapeCommand.spec, ShowCommand.spec, CircuitCommand.spec, NotificationsCommand.spec, DiscoveredCommand.spec]
            + StoreOrderCommand.specs
            + OperatorCommand.specs
            + [SubmitCommand.spec, ReloadCommand.spec, BackupCommand.spec, RestoreCommand.spec, CopyStoreCommand.spec, CheckConfigCommand.spec, helpCommand]
    }

    static var helpCommand: CommandSpec {
        CommandSpec(
            name: "help", abstract: "Show help for reconcilectl or one of its subcommands.",
            usage: "help [<subcommand>]",
            arguments: [ArgumentSpec(name: "subcommand", help: "The subcommand to explain.")]
        ) { arguments, context in
            guard let name = arguments.positionals.first else {
                context.output.out(rootHelp())
                return ExitStatus.success
            }
            guard arguments.positionals.count == 1 else {
                throw CommandLineError.usage("Unexpected argument '\(arguments.positionals[1])'", command: "help")
            }
            guard let command = commands.first(where: { $0.name == name }) else {
                throw unknownSubcommand(name)
            }
            context.output.out(help(for: command))
            return ExitStatus.success
        }
    }

    static func dispatch(_ arguments: [String], context: inout CommandContext) throws -> Int32 {
        var remaining: [String] = []
        var wantsHelp = false
        var index = 0
        var verb: CommandSpec?
        var afterDoubleDash = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if afterDoubleDash {
                remaining.append(argument)
                continue
            }
            switch argument {
            case "--":
                afterDoubleDash = true
                remaining.append(argument)
            case "-c", "--config":
                guard index < arguments.count else {
                    throw CommandLineError.usage("Missing value for '--config <path>'", command: verb?.name)
                }
                context.configPath = arguments[index]
                index += 1
            case _ where argument.hasPrefix("--config="):
                context.configPath = String(argument.dropFirst("--config=".count))
            case "-h", "--help":
                wantsHelp = true
            case "--version" where verb == nil:
                context.output.out(ReconcileVersion.current + "\n")
                return ExitStatus.success
            default:
                if verb == nil && !argument.hasPrefix("-") {
                    guard let command = commands.first(where: { $0.name == argument }) else {
                        throw unknownSubcommand(argument)
                    }
                    verb = command
                } else if verb == nil {
                    var message = "Unknown option '\(argument)'"
                    if let suggestion = Spelling.closest(to: argument, in: ["--config", "--help", "--version"]) {
                        message += "; did you mean '\(suggestion)'?"
                    }
                    throw CommandLineError.usage(message, command: nil)
                } else {
                    remaining.append(argument)
                }
            }
        }
        guard let verb else {
            context.output.out(rootHelp())
            return ExitStatus.success
        }
        if wantsHelp {
            context.output.out(help(for: verb))
            return ExitStatus.success
        }
        let parsed = try ArgumentParser.parse(remaining, for: verb)
        return try verb.run(parsed, context)
    }

    static func unknownSubcommand(_ name: String) -> CommandLineError {
        var message = "Unknown subcommand '\(name)'"
        if let suggestion = Spelling.closest(to: name, in: commands.map(\.name)) { message += "; did you mean '\(suggestion)'?" }
        return .usage(message, command: nil)
    }

    // MARK: - Help

    static let globalOptions: [OptionSpec] = [
        OptionSpec(
            long: "config", short: "c", valueName: "path",
            help: "Configuration file (default: $RECONCILE_CONFIG, else /etc/reconciled/reconciled.conf)."),
    ]

    static func rootHelp() -> String {
        var text = "OVERVIEW: Inspect and steer reconciled, the in-app purchase reconciliation daemon.\n\n"
        text += "USAGE: reconcilectl \(rootUsage)\n\n"
        text += "OPTIONS:\n"
        for option in globalOptions { text += HelpFormatter.optionLine(option) }
        text += HelpFormatter.row("--version", "Show the version.")
        text += HelpFormatter.row("-h, --help", "Show help information.")
        text += "\nSUBCOMMANDS:\n"
        for command in commands { text += HelpFormatter.row(command.name, command.abstract) }
        text += "\n  See 'reconcilectl help <subcommand>' for detailed help.\n"
        return text
    }

    static func help(for command: CommandSpec) -> String {
        var text = "OVERVIEW: \(command.abstract)\n"
        if !command.discussion.isEmpty { text += "\n" + HelpFormatter.paragraphs(command.discussion) + "\n" }
        text += "\nUSAGE: reconcilectl \(command.usage)\n"
        if !command.arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for argument in command.arguments { text += HelpFormatter.row("<\(argument.name)>", argument.help) }
        }
        text += "\nOPTIONS:\n"
        for option in command.options + globalOptions { text += HelpFormatter.optionLine(option) }
        text += HelpFormatter.row("-h, --help", "Show help information.")
        return text
    }
}
