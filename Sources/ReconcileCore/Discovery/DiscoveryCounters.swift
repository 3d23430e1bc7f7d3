import Synchronization

/// How many purchases the stores reported, and what became of them, since the daemon started
/// (DESIGN §5b, §8): the metric `reconciled_discovered_purchases_total{source, outcome}`.
/// ``DiscoveryJournal`` counts each event it logs here, so the journal and the metric never
/// disagree. One instance serves the process (``process``), as a metrics registry does; tests
/// give the journal their own.
public final class DiscoveryCounters: Sendable {
    /// A source (`file`, `history`, `pubsub`, `recover`) and what one event did.
    public struct Key: Sendable, Hashable, Comparable {
        public var source: String
        /// A status word of `reconcilectl discovered` (`waiting`, `joined`, `became_order`,
        /// `no_account`…), `known` for a purchase reported again, `off` for one `Mode=off`
        /// ignored, and for `recover`, `left_<why>` when it made nothing.
        public var outcome: String

        public init(source: String, outcome: String) {
            self.source = source
            self.outcome = outcome
        }

        public static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.source, lhs.outcome) < (rhs.source, rhs.outcome)
        }
    }

    /// The daemon's own counters.
    public static let process = DiscoveryCounters()

    private let counts = Mutex<[Key: Int]>([:])

    public init() {}

    /// Counts one event.
    public func count(_ source: DiscoveredPurchase.Via, _ outcome: String) {
        counts.withLock { $0[Key(source: source.rawValue, outcome: outcome), default: 0] += 1 }
    }

    /// The counts so far.
    public var snapshot: [Key: Int] { counts.withLock { $0 } }
}
