/// Receipts for another app, in a row (DESIGN §5): one is that order's problem (escalated
/// `bundle_mismatch`); several in a row say `BundleID=` is wrong, which is a configuration error
/// (the circuit opens, no order is charged).
public struct BundleMismatchStreak: Sendable, Hashable {
    /// How many in a row make a configuration error.
    public var limit: Int
    public private(set) var count = 0

    public init(limit: Int = 3) {
        self.limit = limit
    }

    /// Looks at an attempt's verdict: the verdict to apply, and the configuration reason when
    /// the streak reached the limit (then the endpoint's circuit must hear of it).
    public mutating func check(_ verdict: VerifierOutcome.Verdict) -> (verdict: VerifierOutcome.Verdict, configuration: Reason?) {
        switch verdict {
        case .escalate(let reason) where reason.code == .bundleMismatch:
            count += 1
            guard count >= limit else { return (verdict, nil) }
            let reason = Reason(.bundleMismatch, detail: "\(count) receipts in a row are for another app; check BundleID=")
            return (.configuration(reason), reason)
        case .match:
            count = 0
            return (verdict, nil)
        default:
            return (verdict, nil)
        }
    }
}
