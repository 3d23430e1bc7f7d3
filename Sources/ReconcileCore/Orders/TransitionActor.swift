/// Who caused a transition: the daemon, or a named operator.
public enum TransitionActor: Sendable, Hashable, CustomStringConvertible {
    case daemon
    /// An operator, by user name (`operator:alice`).
    case `operator`(String)

    public var description: String {
        switch self {
        case .daemon: "daemon"
        case .operator(let name): "operator:\(name)"
        }
    }

    /// Parses the stored form (`daemon`, `operator:alice`).
    public init?(_ text: String) {
        if text == "daemon" {
            self = .daemon
        } else if text.hasPrefix("operator:"), text.count > "operator:".count {
            self = .operator(String(text.dropFirst("operator:".count)))
        } else {
            return nil
        }
    }
}
