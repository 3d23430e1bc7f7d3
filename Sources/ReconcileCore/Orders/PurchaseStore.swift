/// Which store an order was bought in (DESIGN §5 "Delivery": the `store` a delivery names):
/// Google Play when it carries a purchase token, the App Store otherwise. Printed and sent as the
/// raw values.
public enum PurchaseStore: String, CaseIterable, Sendable, Hashable {
    case appStore = "app_store"
    case googlePlay = "google_play"

    /// The store of an order with `proof`.
    public init(_ proof: OrderProof) {
        self = proof.isGooglePlay ? .googlePlay : .appStore
    }
}
