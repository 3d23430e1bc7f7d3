import ReconcileCore

/// Checks shared by the verbs, with argument-parser's wording.
enum ArgumentChecks {
    static func noPositionals(_ arguments: ParsedArguments, command: String) throws {
        if let extra = arguments.positionals.first {
            throw CommandLineError.usage("Unexpected argument '\(extra)'", command: command)
        }
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
