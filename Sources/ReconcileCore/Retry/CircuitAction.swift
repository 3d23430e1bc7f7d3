/// What an operator may do to an endpoint's circuit (`reconcilectl circuit ENDPOINT
/// --probe-now | --close`, DESIGN §10).
public enum CircuitAction: String, Sendable, Hashable, CaseIterable {
    /// An open circuit's cool-down ends now: the next turn sends its probe.
    case probeNow = "probe-now"
    /// The circuit closes: requests go at once, and the failure count starts again.
    case close
}
