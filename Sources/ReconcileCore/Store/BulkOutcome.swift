/// What an operator action on many orders did, counted (DESIGN §10: bulk verbs answer with
/// counts). The action is applied in batches, one transaction each; a stop between two batches
/// ends it early, and the counts say how far it got.
public struct BulkOutcome: Sendable, Hashable {
    /// Orders the action was for: in the state when it began, or named.
    public var matched: Int
    public var applied: Int = 0
    /// Orders whose attempt was in flight: applied when it ends.
    public var deferred: Int = 0
    public var refused: Int = 0
    public var notFound: Int = 0
    /// Orders that had left the state before their batch came (the daemon moved them).
    public var skipped: Int = 0
    /// Orders not reached because the daemon began stopping (0 unless `interrupted`).
    public var notReached: Int = 0
    public var interrupted: Bool = false
    /// The first outcomes of each kind: up to the sample size of changed orders, then as many
    /// unchanged ones (refused, not found), in the order they were met.
    public var examples: [OperatorOutcome] = []

    public init(matched: Int) {
        self.matched = matched
    }

    /// Orders the action changed or will change (applied or deferred).
    public var changed: Int { applied + deferred }

    /// Counts `outcome`, keeping it as an example while there is room for its kind.
    public mutating func add(_ outcome: OperatorOutcome, sampleSize: Int) {
        switch outcome.result {
        case .applied: applied += 1
        case .deferred: deferred += 1
        case .refused: refused += 1
        case .notFound: notFound += 1
        }
        let sameKind = outcome.changed ? changedExamples : examples.count - changedExamples
        guard sameKind < sampleSize else { return }
        examples.append(outcome)
        if outcome.changed { changedExamples += 1 }
    }

    /// How many of `examples` are changed orders.
    private var changedExamples = 0
}
