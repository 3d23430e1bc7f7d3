import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// `reconcilectl __complete WORD...`: the hidden verb the bash completion calls. Prints one
/// candidate per line, or `__files__` when the shell should complete file names. Never fails:
/// a store it cannot read simply offers no order ids.
enum CompletionCommand {
    static let name = "__complete"
    static let filesMarker = "__files__"

    static func run(_ words: [String], context: CommandContext) -> Int32 {
        var context = context
        if let index = words.firstIndex(where: { $0 == "-c" || $0 == "--config" }), index + 1 < words.count - 1 {
            context.configPath = words[index + 1]
        } else if let word = words.dropLast().first(where: { $0.hasPrefix("--config=") }) {
            context.configPath = String(word.dropFirst("--config=".count))
        }
        let reading = context
        let reply = Completion.reply(
            to: words, commands: Reconcilectl.commands, globalOptions: Reconcilectl.globalOptions
        ) { prefix in
            let filter = OrderFilter(orderIDPrefix: prefix, limit: Completion.orderIDLimit)
            guard let ids = try? CommandEnvironment(reading).readStore().orderIDs(filter) else { return [] }
            return ids.sorted()
        }
        switch reply {
        case .files: context.output.out(filesMarker + "\n")
        case .words(let words): context.output.out(words.map { $0 + "\n" }.joined())
        }
        return ExitStatus.success
    }
}
