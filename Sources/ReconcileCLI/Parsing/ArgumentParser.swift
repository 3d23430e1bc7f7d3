import ReconcileCore
import ReconcileFoundation

/// Parses a verb's arguments against its ``CommandSpec``, the way swift-argument-parser does:
/// `--opt value` and `--opt=value`, bundled flags stay out, `--` ends options, and an unknown
/// option is an error that suggests the closest known one.
enum ArgumentParser {
    static func parse(_ arguments: [String], for command: CommandSpec) throws(CommandLineError) -> ParsedArguments {
        var parsed = ParsedArguments()
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || !argument.hasPrefix("-") || argument == "-" {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            var name = argument
            var inline: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = find(name, in: command) else {
                var message = "Unknown option '\(name)'"
                let names = command.options.map { "--\($0.long)" } + ["--help", "--config"]
                if let suggestion = Spelling.closest(to: name, in: names) { message += "; did you mean '\(suggestion)'?" }
                throw CommandLineError.usage(message, command: command.name)
            }
            if option.isFlag {
                guard inline == nil else {
                    throw CommandLineError.usage("'--\(option.long)' does not take a value", command: command.name)
                }
                parsed.flags.insert(option.long)
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard index < arguments.count else {
                    throw CommandLineError.usage("Missing value for '--\(option.long) <\(option.valueName!)>'", command: command.name)
                }
                value = arguments[index]
                index += 1
            }
            if !option.repeatable, parsed.values[option.long] != nil {
                throw CommandLineError.usage("'--\(option.long)' may be given only once", command: command.name)
            }
            parsed.values[option.long, default: []].append(value)
        }
        return parsed
    }

    static func find(_ name: String, in command: CommandSpec) -> OptionSpec? {
        if name.hasPrefix("--") {
            let long = String(name.dropFirst(2))
            return command.options.first { $0.long == long }
        }
        guard name.count == 2, let short = name.last else { return nil }
        return command.options.first { $0.short == short }
    }
}

/// How a command ends when it cannot do what was asked.
enum CommandLineError: Error {
    /// A wrong command line: `Error:`, the usage and a hint on stderr, exit 64.
    case usage(String, command: String?)
    /// A runtime failure: `Error:` and the message on stderr, exit `status`.
    case failure(String, status: Int32 = ExitStatus.failure)

    /// The message alone.
    var message: String {
        switch self {
        case .usage(let message, _), .failure(let message, _): message
        }
    }
}
