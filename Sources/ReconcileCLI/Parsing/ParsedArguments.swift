/// A verb's arguments after parsing: positionals in order, options by long name.
struct ParsedArguments {
    var positionals: [String] = []
    var values: [String: [String]] = [:]
    var flags: Set<String> = []

    func flag(_ long: String) -> Bool { flags.contains(long) }

    /// The last value given for an option.
    func value(_ long: String) -> String? { values[long]?.last }

    /// Every value given for a repeatable option, in order.
    func allValues(_ long: String) -> [String] { values[long] ?? [] }
}
