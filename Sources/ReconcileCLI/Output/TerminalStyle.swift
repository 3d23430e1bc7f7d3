/// Colour on a terminal, and only there (no colour with `NO_COLOR` set, or into a pipe).
struct TerminalStyle {
    enum Colour: String {
        case red = "31"
        case green = "32"
        case yellow = "33"
        case cyan = "36"
        case dim = "2"
    }

    let enabled: Bool

    static let plain = TerminalStyle(enabled: false)

    init(enabled: Bool) {
        self.enabled = enabled
    }

    init(output: any CommandOutput, environment: [String: String]) {
        enabled = output.isTerminal && environment["NO_COLOR"].map(\.isEmpty) ?? true && environment["TERM"] != "dumb"
    }

    func paint(_ text: String, _ colour: Colour) -> String {
        enabled ? "\u{1B}[\(colour.rawValue)m\(text)\u{1B}[0m" : text
    }

    func bold(_ text: String) -> String {
        enabled ? "\u{1B}[1m\(text)\u{1B}[0m" : text
    }

    /// The colour a state is shown in.
    static func colour(of state: String) -> Colour? {
        switch state {
        case "finished": .green
        case "rejected", "escalated", "expired": .red
        case "pending", "verifying", "verified", "waiting": .yellow
        case "held", "cancelled": .cyan
        default: nil
        }
    }
}
