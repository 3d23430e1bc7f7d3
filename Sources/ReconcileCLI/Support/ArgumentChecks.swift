import ReconcileCore
import ReconcileFoundation

/// Checks shared by the verbs, with argument-parser's wording.
enum ArgumentChecks {
    static func noPositionals(_ arguments: ParsedArguments, command: String) throws {
        if let extra = arguments.positionals.first {
            throw CommandLineError.usage("Unexpected argument '\(extra)'", command: command)
        }
    }

    /// The one positional argument a verb takes, named `name` in its usage.
    static func onePositional(_ arguments: ParsedArguments, name: String, command: String) throws -> String {
        guard let value = arguments.positionals.first else {
            throw CommandLineError.usage("Missing expected argument '<\(name)>'", command: command)
        }
        guard arguments.positionals.count == 1 else {
            throw CommandLineError.usage("Unexpected argument '\(arguments.positionals[1])'", command: command)
        }
        return value
    }

    /// `--limit <n>` (1 to 1,000,000), or `fallback` when it is not given.
    static func limit(_ arguments: ParsedArguments, command: String, fallback: Int = 100) throws -> Int {
        guard let text = arguments.value("limit") else { return fallback }
        guard let number = Int(text), number > 0, number <= 1_000_000 else {
            throw CommandLineError.usage("Invalid value '\(text)' for '--limit <n>'; use a number from 1 to 1000000", command: command)
        }
        return number
    }

    static func state(_ text: String, command: String) throws -> OrderState {
        guard let state = OrderState(rawValue: text) else {
            var message = "Invalid value '\(text)' for '--state <state>'"
            if let suggestion = Spelling.closest(to: text, in: OrderState.allCases.map(\.rawValue)) {
                message += "; did you mean '\(suggestion)'?"
            } else {
                message += "; use one of \(OrderState.allCases.map(\.rawValue).joined(separator: ", "))"
            }
            throw CommandLineError.usage(message, command: command)
        }
        return state
    }
}
