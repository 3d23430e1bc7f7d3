/// Where an order is in its life (DESIGN §4).
public enum OrderState: String, CaseIterable, Sendable, Hashable, Codable, CustomStringConvertible {
    /// Stored, but without proof the configured verifier can use.
    case waiting
    /// Has proof; waits for its next attempt.
    case pending
    /// An attempt is in flight; the daemon holds its lease.
    case verifying
    /// Granted by the verifier; delivery not yet acknowledged.
    case verified
    /// Done: verified and delivered, or finished by hand. Terminal.
    case finished
    /// The verifier said no for good. New proof or an operator can revive it.
    case rejected
    /// Needs a person. New proof or an operator can revive it.
    case escalated
    /// Kept from attempts by an operator until released.
    case held
    /// Cancelled by an operator. Terminal.
    case cancelled
    /// Waited without usable proof for longer than `MaxAge`.
    case expired
    /// Finished, then the store took the money back (a refund, a Family Sharing revocation, a
    /// chargeback; DESIGN §5a). Terminal, except that a reversed refund finishes it again.
    case revoked

    public var description: String { rawValue }

    /// Nothing can change a terminal order's state.
    public var isTerminal: Bool { self == .finished || self == .cancelled || self == .revoked }

    /// States the daemon has stopped working on, but which new proof or an operator can revive.
    public var isDormant: Bool { self == .rejected || self == .escalated || self == .expired }

    /// A short explanation for people, used by `reconcilectl` and log lines.
    public var meaning: String {
        switch self {
        case .waiting: "stored without proof the verifier can use"
        case .pending: "waiting for its next attempt"
        case .verifying: "an attempt is in flight"
        case .verified: "granted; delivery not yet acknowledged"
        case .finished: "done"
        case .rejected: "the verifier refused it"
        case .escalated: "needs a person"
        case .held: "held by an operator"
        case .cancelled: "cancelled by an operator"
        case .expired: "no usable proof arrived in time"
        case .revoked: "the store took the money back"
        }
    }
}
