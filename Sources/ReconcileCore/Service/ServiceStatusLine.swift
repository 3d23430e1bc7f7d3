/// The one-line summary systemd shows in `systemctl status` (`STATUS=`, DESIGN §8):
/// `pending=12 verifying=3 escalated=1 circuit=closed`.
///
/// The three counts an operator watches are always there; `waiting`, `verified` and `held`
/// only when non-zero. The circuit part names each endpoint whose circuit is not closed.
public struct ServiceStatusLine: Sendable, Hashable, CustomStringConvertible {
    /// One endpoint's circuit: its name and `closed`, `open` or `half-open`.
    public struct Circuit: Sendable, Hashable {
        public var endpoint: String
        public var state: String

        public init(endpoint: String, state: String) {
            self.endpoint = endpoint
            self.state = state
        }
    }

    public var counts: [OrderState: Int]
    public var circuits: [Circuit]

    /// The states the line counts (the store need count no others).
    public static let countedStates: [OrderState] = [.pending, .verifying, .escalated, .waiting, .verified, .held]

    public init(counts: [OrderState: Int], circuits: [Circuit]) {
        self.counts = counts
        self.circuits = circuits
    }

    public var description: String {
        var parts: [String] = []
        for state in Self.countedStates.prefix(3) {
            parts.append("\(state)=\(counts[state] ?? 0)")
        }
        for state in Self.countedStates.dropFirst(3) where (counts[state] ?? 0) > 0 {
            parts.append("\(state)=\(counts[state] ?? 0)")
        }
        let troubled = circuits.filter { $0.state != "closed" }
        parts.append("circuit=" + (troubled.isEmpty ? "closed" : troubled.map { "\($0.state)(\($0.endpoint))" }.joined(separator: ",")))
        return parts.joined(separator: " ")
    }
}
