/// What an attempt on an order is: verifying a `pending` order, or delivering a `verified` one.
public enum WorkKind: String, CaseIterable, Sendable, Hashable {
    case verify
    case deliver

    /// The state orders of this kind wait in.
    public var waitingState: OrderState { self == .verify ? .pending : .verified }
}
