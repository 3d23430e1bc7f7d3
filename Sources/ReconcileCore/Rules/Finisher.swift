/// Who finished an order (DESIGN §4: `resolve` records it): the stored and printed words are the
/// raw values.
public enum Finisher: String, Sendable, Hashable, CaseIterable {
    /// The delivery endpoint acknowledged the grant.
    case delivery
    /// The merchant's own endpoint verified and granted it in one step (`Kind=http`).
    case merchant
    /// Apple (or Google) verified it and no delivery step follows.
    case verifier
    /// An operator resolved it by hand.
    case `operator`
    /// A late phone order for a purchase that already became an order of its own (DESIGN §5b):
    /// finished with nothing delivered.
    case discovery
}
