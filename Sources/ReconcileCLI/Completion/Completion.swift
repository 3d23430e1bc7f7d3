import ReconcileCore

/// What to offer for the word being completed on a `reconcilectl` command line, worked out from
/// the verbs' own specs so that completion never drifts from the parser. The shell script
/// (`etc/bash-completion/reconcilectl`) runs `reconcilectl __complete WORD...` with the words
/// after `reconcilectl` up to and including the one under the cursor.
enum Completion {
    /// What the shell should offer.
    enum Reply: Equatable {
        /// These words (the shell keeps those that start with what was typed).
        case words([String])
        /// File names, completed by the shell itself.
        case files
    }

    /// The most order ids offered at once: a prefix narrows them.
    static let orderIDLimit = 50

    /// `words`: the words after `reconcilectl`, the last one the (possibly empty) word being
    /// completed. `orderIDs(prefix)` answers the stored order ids starting with a prefix.
    static func reply(
        to words: [String], commands: [CommandSpec], globalOptions: [OptionSpec],
        orderIDs: (String) -> [String]
    ) -> Reply {
        guard let current = words.last else { return .words(commands.map(\.name)) }
        let before = words.dropLast()
        var verb: CommandSpec?
        var expecting: OptionSpec?
        var positionals = 0
        var afterDoubleDash = false
        for word in before {
            if expecting != nil {   // this word is that option's value
                expecting = nil
                continue
            }
            if afterDoubleDash {
                positionals += 1
                continue
            }
            if word == "--" {
                afterDoubleDash = true
            } else if word.hasPrefix("-") && word != "-" {
                let options = globalOptions + (verb?.options ?? [])
                if let option = option(named: word, in: options), !option.isFlag, !word.contains("=") { expecting = option }
            } else if verb == nil {
                verb = commands.first { $0.name == word }
                if verb == nil { return .words([]) }   // an unknown verb: nothing sensible to offer
            } else {
                positionals += 1
            }
        }
        if let option = expecting { return values(for: option, commands: commands) }
        guard let verb else {
            if current.hasPrefix("-") {
                return .words(globalOptions.map { "--\($0.long)" } + ["--help", "--version"])
            }
            return .words(commands.map(\.name))
        }
        if current.hasPrefix("-") && !afterDoubleDash {
            return .words(verb.options.map { "--\($0.long)" } + ["--help"])
        }
        // Verbs that take many (retry, hold, ...) repeat their one argument.
        guard let argument = verb.arguments.indices.contains(positionals) ? verb.arguments[positionals] : verb.arguments.last,
            positionals < verb.arguments.count || takesMany(verb)
        else { return .words([]) }
        switch argument.name {
        case "order-id": return .words(orderIDs(current))
        case "subcommand": return .words(commands.map(\.name))
        case "endpoint": return .words(VerificationEndpoint.allCases.map(\.rawValue))
        case "file": return .files
        default: return .words([])
        }
    }

    /// The values an option takes, where they are a known set.
    static func values(for option: OptionSpec, commands: [CommandSpec]) -> Reply {
        switch option.long {
        case "state": .words(OrderState.allCases.map(\.rawValue))
        case "store": .words(PurchaseStore.allCases.map(\.rawValue))
        case "by": .words(QueueShape.Grouping.allCases.map(\.rawValue))
        case "config": .files
        default: .words([])
        }
    }

    static func option(named word: String, in options: [OptionSpec]) -> OptionSpec? {
        if word.hasPrefix("--") {
            let name = word.dropFirst(2).split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return options.first { $0.long == name }
        }
        guard word.count == 2, let short = word.last else { return nil }
        return options.first { $0.short == short }
    }

    /// The verbs whose usage repeats their argument (`retry <order-id>...`).
    static func takesMany(_ verb: CommandSpec) -> Bool {
        verb.arguments.last.map { verb.usage.contains("<\($0.name)>...") } ?? false
    }
}
