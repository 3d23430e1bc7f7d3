import ReconcileFoundation

/// What the daemon does with purchases the stores report on their own (`[Discovery]`, DESIGN
/// §5b, §9).
public struct DiscoverySettings: Sendable, Hashable {
    /// `Mode=`.
    public enum Mode: String, Sendable, Hashable, CaseIterable {
        /// Ignored: nothing is recorded.
        case off
        /// Recorded, listed and logged; no order is made (the default).
        case record
        /// After the grace, an order is made and delivered as any other.
        case deliver
    }

    public var mode: Mode
    /// `Grace=`: how long a purchase waits for the phone's own order, which carries the
    /// merchant's order id and wins when it is only late.
    public var grace: Duration
    /// `Products=`: which products may become orders; `nil` for every one.
    public var products: [ShellGlob]?

    public init(mode: Mode = .record, grace: Duration = .seconds(15 * 60), products: [ShellGlob]? = nil) {
        self.mode = mode
        self.grace = grace
        self.products = products
    }

    /// Whether `productID` may become an order.
    public func admits(_ productID: String) -> Bool {
        guard let products else { return true }
        return products.contains { $0.matches(productID) }
    }
}
