/// One verb of `reconcilectl`: its name, help text, options and what it runs.
struct CommandSpec {
    var name: String
    /// One line for the verb list.
    var abstract: String
    /// The usage line after `reconcilectl `.
    var usage: String
    /// Longer help: what it does, exactly.
    var discussion: String = ""
    var arguments: [ArgumentSpec] = []
    var options: [OptionSpec] = []
    /// Validates the parsed arguments and runs the verb.
    var run: (ParsedArguments, CommandContext) throws -> Int32
}

/// A named option: `--state S`, `--json`, `-n N`.
struct OptionSpec {
    var long: String
    var short: Character?
    /// For options that take a value, its name in help (`S`, `SPAN`); `nil` for a flag.
    var valueName: String?
    var help: String
    /// May be given more than once (`--state waiting --state pending`).
    var repeatable = false

    var isFlag: Bool { valueName == nil }
}

/// A positional argument, for help.
struct ArgumentSpec {
    var name: String
    var help: String
}
