/// What a finished Google Play order owes Google (`[GooglePlay] Acknowledge=`, `Consume=`,
/// DESIGN §5): the settings in force when the order finishes, handed to the completion rule.
public struct PlayFollowUp: Sendable, Hashable {
    /// Acknowledge purchases Google says are not acknowledged yet.
    public var acknowledge: Bool
    /// Consume them instead (consumables: the product can be bought again); consuming acknowledges.
    public var consume: Bool
    /// `[GooglePlay] PackageName=`: for orders that name none.
    public var packageName: String?

    public init(acknowledge: Bool = true, consume: Bool = false, packageName: String? = nil) {
        self.acknowledge = acknowledge
        self.consume = consume
        self.packageName = packageName
    }
}
