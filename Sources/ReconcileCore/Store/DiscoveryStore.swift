import Foundation
import ReconcileFoundation

/// A purchase a store reported, as the store holds it (`reconcilectl discovered`): what the store
/// said, where it stands, and when the daemon first heard of it.
public struct StoredDiscoveredPurchase: Sendable, Hashable {
    public var reference: Int64
    public var purchase: DiscoveredPurchase
    public var status: DiscoveryRules.Status
    public var discoveredAt: Date
    public var updatedAt: Date

    public init(reference: Int64, purchase: DiscoveredPurchase, status: DiscoveryRules.Status, discoveredAt: Date, updatedAt: Date) {
        self.reference = reference
        self.purchase = purchase
        self.status = status
        self.discoveredAt = discoveredAt
        self.updatedAt = updatedAt
    }
}

/// What one report of a purchase did (``DiscoveryStore/recordDiscovered(_:settings:now:)``).
public enum DiscoveryArrival: Sendable, Hashable {
    /// Kept with this status.
    case recorded(DiscoveryRules.Status)
    /// Known already (a second report, or another node's): left as it stands.
    case known(DiscoveryRules.Status)
    /// `Mode=off`: nothing kept.
    case ignored
}

/// What the end of one purchase's grace did (``DiscoveryStore/settleDiscovered(settings:verifiers:now:limit:digest:)``).
public struct DiscoverySettlement: Sendable, Hashable {
    public var purchase: DiscoveredPurchase
    /// Where it stands now.
    public var status: DiscoveryRules.Status
    /// For a purchase that became an order: what taking the order in did.
    public var ingest: IngestOutcome?

    public init(purchase: DiscoveredPurchase, status: DiscoveryRules.Status, ingest: IngestOutcome? = nil) {
        self.purchase = purchase
        self.status = status
        self.ingest = ingest
    }
}

/// What `reconcilectl recover` did with one purchase of a customer's store order.
public struct RecoveredPurchase: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// It became this order (`origin` `operator`), taken in like a spool file.
        case made(orderID: String)
        /// No order was made, and why.
        case left(DiscoveryRules.Left)
    }

    /// The purchase as the look-up found it (its holder as it was before).
    public var found: LookedUpPurchase
    public var result: Result

    public init(found: LookedUpPurchase, result: Result) {
        self.found = found
        self.result = result
    }

    /// The object `recover --json` prints for it: the look-up's fields, and `made` (the order
    /// made, or `null`), `left` (a word, or `null`) and `why` (words, or `null`).
    public var json: JSONValue {
        guard case .object(var object) = found.json else { return found.json }
        switch result {
        case .made(let orderID):
            object["made"] = .string(orderID)
            object["left"] = .null
            object["why"] = .null
        case .left(let left):
            object["made"] = .null
            object["left"] = .string(left.code)
            object["why"] = .string(left.description)
        }
        return .object(object)
    }
}

/// The store's side of purchases the phone never sent (DESIGN §5b): each purchase kept once by
/// its transaction key, joined to the order that holds its transaction, made an order after its
/// grace — each decision by ``DiscoveryRules``, in one transaction with what it changes.
public protocol DiscoveryStore: Sendable {
    /// Keeps purchases the stores reported, in one transaction: each looked up among the
    /// orders (a claim, an order's `transaction_id` or purchase token) and given the status
    /// ``DiscoveryRules/arrive(_:holder:known:settings:now:)`` decides. A purchase known already
    /// is left as it stands.
    func recordDiscovered(_ purchases: [DiscoveredPurchase], settings: DiscoverySettings, now: Date) throws -> [DiscoveryArrival]

    /// Settles up to `limit` purchases whose grace has ended by `now`, oldest first
    /// (``DiscoveryRules/graceEnded(_:holder:settings:)``): joined to an order that holds it by
    /// now, recorded, escalated, or made an order — taken in like a spool file, `digest` hashing
    /// its content — in the transaction that settles it.
    func settleDiscovered(
        settings: DiscoverySettings, verifiers: ConfiguredVerifiers, now: Date, limit: Int, digest: @Sendable ([UInt8]) -> String
    ) throws -> [DiscoverySettlement]

    /// When the soonest waiting purchase's grace ends; `nil` when none waits.
    func nextGraceEnd() throws -> Date?

    /// The purchases kept, the newest first.
    func discoveredPurchases(limit: Int) throws -> [StoredDiscoveredPurchase]

    /// `lookup`: each purchase with the stored order that holds its transaction (a claim, an
    /// order's `transaction_id` or purchase token, an order it became) and its discovered
    /// status, if any. Reads only.
    func holdings(of purchases: [LookedUpPurchase]) throws -> [LookedUpPurchase]

    /// `recover`: for each purchase, in one transaction, ``DiscoveryRules/recover(_:holder:known:user:allowTestPurchases:)``
    /// decides; an order it makes is taken in like a spool file (`digest` hashing its content)
    /// and the purchase kept as discovered, `became_order`, so that running it again — or a late
    /// phone order — finds it held.
    func recover(
        _ purchases: [LookedUpPurchase], user: String?, allowTestPurchases: Bool, verifiers: ConfiguredVerifiers, now: Date,
        digest: @Sendable ([UInt8]) -> String
    ) throws -> [RecoveredPurchase]
}
