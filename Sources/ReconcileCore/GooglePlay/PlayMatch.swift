/// Google Play's answer for an order that it says was paid, as the verifier hands it on to be
/// claimed: the purchase, the key its claim takes, and the package it was asked for.
public struct PlayMatch: Sendable, Hashable {
    public var purchase: PlayPurchase
    public var claimKey: String
    public var packageName: String

    public init(purchase: PlayPurchase, claimKey: String, packageName: String) {
        self.purchase = purchase
        self.claimKey = claimKey
        self.packageName = packageName
    }
}
