/// What an attempt on an order is: verifying a `pending` order (an App Store one, or a Google
/// Play one: each kind has its own due index, so that a turn's claims per endpoint stay honest),
/// or delivering a `verified` one.
public enum WorkKind: String, CaseIterable, Sendable, Hashable {
    /// A `pending` order without a purchase token: `[Verifier]`.
    case verify
    case deliver
    /// A `pending` order with a purchase token: `[GooglePlay]` (or a `Kind=http` merchant).
    case verifyPlay = "verify_play"

    /// The state orders of this kind wait in.
    public var waitingState: OrderState { self == .deliver ? .verified : .pending }

    /// Whether it verifies (counted in `attempts`) rather than delivers (`delivery_attempts`).
    public var isVerification: Bool { self != .deliver }

    /// The kind its requests are recorded under in an order's history: `verify` or `deliver`.
    public var recordedKind: String { isVerification ? WorkKind.verify.rawValue : WorkKind.deliver.rawValue }
}
