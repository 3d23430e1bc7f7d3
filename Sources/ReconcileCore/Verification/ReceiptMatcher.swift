import Foundation

/// Decides which purchase in a verified receipt is the order's (DESIGN §5): product, transaction
/// id and account token as the order has them; subscription renewals never match (an order is the
/// initial purchase); refunded items dropped; items claimed by another order dropped; the
/// purchase closest in time preferred.
public enum ReceiptMatcher {
    /// What the order says about its purchase.
    public struct OrderKey: Sendable, Hashable {
        public var orderID: String
        public var productID: String
        public var transactionID: String?
        /// applicationUsername; compared as a UUID when it is one.
        public var applicationUsername: String?
        /// The client's `created_at`, else when the daemon took the order in.
        public var referenceTime: Date

        public init(orderID: String, productID: String, transactionID: String? = nil, applicationUsername: String? = nil, referenceTime: Date) {
            self.orderID = orderID
            self.productID = productID
            self.transactionID = transactionID
            self.applicationUsername = applicationUsername
            self.referenceTime = referenceTime
        }
    }

    /// The decision.
    public enum Result: Sendable, Hashable {
        /// This purchase is the order's; claim its transaction id.
        case matched(AppleReceiptItem)
        /// Every matching purchase is claimed by another order (named).
        case duplicateTransaction(transactionID: String, claimant: String)
        /// Only refunded or revoked purchases match.
        case refunded
        /// Nothing in the receipt matches (a finished consumable disappears from later receipts).
        case noMatchingPurchase
    }

    /// The items that could be the order's purchase, before refunds and claims are looked at;
    /// their transaction ids are what the store checks for claims.
    public static func candidates(in items: [AppleReceiptItem], for order: OrderKey) -> [AppleReceiptItem] {
        let token = order.applicationUsername.flatMap(UUIDText.normalized)
        var seen = Set<String>()
        return items.filter { item in
            guard item.productID == order.productID, !item.isRenewal else { return false }
            if let transactionID = order.transactionID, item.transactionID != transactionID { return false }
            if let token {
                guard let itemToken = item.appAccountToken.flatMap(UUIDText.normalized), itemToken == token else { return false }
            }
            return seen.insert(item.transactionID).inserted
        }
    }

    /// Matches, given who holds the claims on the candidates' transaction ids.
    ///
    /// - Parameter claims: transaction id → the order id holding its claim (an order's own claim
    ///   does not count against it: a re-verification after a crash finds its own claim).
    public static func match(_ items: [AppleReceiptItem], for order: OrderKey, claims: [String: String]) -> Result {
        let candidates = candidates(in: items, for: order)
        guard !candidates.isEmpty else { return .noMatchingPurchase }
        let live = candidates.filter { !$0.isCancelled }
        guard !live.isEmpty else { return .refunded }
        let free = live.filter { claims[$0.transactionID] == nil || claims[$0.transactionID] == order.orderID }
        guard !free.isEmpty else {
            let first = live[0]
            return .duplicateTransaction(transactionID: first.transactionID, claimant: claims[first.transactionID] ?? "?")
        }
        let reference = Int64(order.referenceTime.timeIntervalSince1970 * 1000)
        let best = free.min { a, b in
            let distanceA = a.purchaseDateMilliseconds.map { distance($0, reference) } ?? UInt64.max
            let distanceB = b.purchaseDateMilliseconds.map { distance($0, reference) } ?? UInt64.max
            return distanceA != distanceB ? distanceA < distanceB : a.transactionID < b.transactionID
        }!
        return .matched(best)
    }

    /// How far apart two times in milliseconds are. Unsigned, so that any two Int64 values work:
    /// a purchase date is whatever the answer says, and `abs(a - b)` traps at the extremes.
    static func distance(_ a: Int64, _ b: Int64) -> UInt64 {
        a >= b ? UInt64(bitPattern: a &- b) : UInt64(bitPattern: b &- a)
    }
}

/// UUIDs as text: `app_account_token` and applicationUsername compare as parsed UUIDs, so case
/// does not matter.
public enum UUIDText {
    /// The lower-case canonical form, or `nil` when `text` is not a UUID.
    public static func normalized(_ text: String) -> String? {
        UUID(uuidString: text).map { $0.uuidString.lowercased() }
    }
}
