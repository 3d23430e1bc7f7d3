import Foundation
import ReconcileFoundation

/// What becomes of a purchase a store reported on its own (DESIGN §5b), decided without I/O: the
/// store looks up which order holds the purchase's transaction (a claim, an order's
/// `transaction_id` or purchase token) and keeps what these rules say, in one transaction with
/// any order they make.
///
/// A purchase an order holds is only recorded on it. Otherwise it waits out `Grace=` for the
/// phone's own order, which carries the merchant's order id and takes the purchase over when it
/// is only late. After the grace, `Mode=deliver` makes it an order (`apple:<transactionId>`,
/// `google:<orderId>`) granted to the account the app set at purchase; with no account, or a
/// product `Products=` does not admit, a person decides. A phone order verified for a purchase
/// that already became an order ends `same_purchase_as` that order: one purchase, one grant.
public enum DiscoveryRules {
    /// Where a discovered purchase stands (`reconcilectl discovered`).
    public enum Status: Sendable, Hashable {
        /// Waiting for the phone's own order until `until`, when its grace ends.
        case waiting(until: Date)
        /// An order holds its transaction: found so, or the phone's order took it over.
        case joined(orderID: String)
        /// It became order `orderID` (`Mode=deliver` after the grace, or `recover`).
        case becameOrder(orderID: String)
        /// `Mode=record`: listed and logged; no order is made.
        case recorded
        /// No account to grant it to: escalated for a person (`recover --user`).
        case noAccount
        /// `Products=` does not admit its product.
        case ignoredByProducts
        /// Not a purchase the daemon acts on.
        case ignored(Ignored)

        /// The word `reconcilectl discovered` prints and the store keeps.
        public var code: String {
            switch self {
            case .waiting: "waiting"
            case .joined: "joined"
            case .becameOrder: "became_order"
            case .recorded: "recorded"
            case .noAccount: "no_account"
            case .ignoredByProducts: "ignored_product"
            case .ignored(let why): "ignored_\(why.rawValue)"
            }
        }

        /// The status kept as ``code``, with the grace end a waiting one needs and the order a
        /// joined one or one that became an order names; `nil` for a code this version does not
        /// know, or one whose time or order is missing.
        public init?(code: String, graceUntil: Date?, orderID: String?) {
            let status: Status? =
                switch code {
                case "waiting": graceUntil.map { .waiting(until: $0) }
                case "joined": orderID.map { .joined(orderID: $0) }
                case "became_order": orderID.map { .becameOrder(orderID: $0) }
                case "recorded": .recorded
                case "no_account": .noAccount
                case "ignored_product": .ignoredByProducts
                default: Ignored.allCases.first { "ignored_\($0.rawValue)" == code }.map { .ignored($0) }
                }
            guard let status else { return nil }
            self = status
        }
    }

    /// Why a purchase is not acted on.
    public enum Ignored: String, Sendable, Hashable, CaseIterable {
        /// A subscription purchase or renewal: never an order of its own.
        case subscription
        /// The store already took the money back.
        case revoked
        /// Its store id does not make a valid order id.
        case unnamable
    }

    /// An order a purchase becomes: the submission it is ingested as, and who asked for it.
    public struct DiscoveredOrder: Sendable, Hashable {
        /// Who made it: the daemon after the grace, or an operator.
        public typealias Origin = OrderOrigin

        public var submission: OrderSubmission
        public var origin: Origin
        /// Where the store reported the purchase, for the order's history.
        public var via: DiscoveredPurchase.Via

        /// What the store takes in: the order as an order file would say it (DESIGN §3, with
        /// `"origin"` beside), hashed by `digest` (hex SHA-256, as the spool's files are).
        public func candidate(digest: ([UInt8]) -> String) -> IngestCandidate {
            let proof = submission.proof
            let raw = JSONWriter.bytes(.object(JSONObject([
                "order_id": .string(submission.orderID), "product_id": .string(submission.productID),
                "transaction_id": proof.transactionID.map(JSONValue.string), "signed_transaction": proof.signedTransaction.map(JSONValue.string),
                "purchase_token": proof.purchaseToken.map(JSONValue.string), "package_name": proof.packageName.map(JSONValue.string),
                "application_username": submission.applicationUsername.map(JSONValue.string), "user_id": submission.userID.map(JSONValue.string),
                "created_at": submission.createdAt.map { JSONValue.string(RFC3339.format($0)) }, "origin": .string(origin.rawValue),
            ])))
            let source = origin == .store ? "a purchase the store reported (\(via.rawValue))" : "reconcilectl recover (\(via.rawValue))"
            return IngestCandidate(submission: submission, raw: raw, contentHash: digest(raw), fileName: source, origin: origin)
        }
    }

    /// What the daemon does once a waiting purchase's grace has ended.
    public enum GraceEnd: Sendable, Hashable {
        /// It takes this status; no order is made.
        case settles(Status)
        /// It becomes this order (and then its status is ``Status/becameOrder(orderID:)``).
        case becomesOrder(DiscoveredOrder)
    }

    /// A purchase reported by a store (a notification, a history page, a pull): its status, or
    /// `nil` when nothing is recorded — `Mode=off`, or a purchase known already (`known`: its
    /// status), which a second report does not change. `holder`: the order holding its
    /// transaction, if any.
    public static func arrive(
        _ purchase: DiscoveredPurchase, holder: String?, known: Status?, settings: DiscoverySettings, now: Date
    ) -> Status? {
        guard settings.mode != .off, known == nil else { return nil }
        if let holder { return .joined(orderID: holder) }
        if let ignored = ignored(purchase) { return .ignored(ignored) }
        return .waiting(until: now.addingTimeInterval(settings.grace.inSeconds))
    }

    /// A waiting purchase's grace has ended: `holder` is looked up again (the phone's order may
    /// have been verified meanwhile). `Mode=` is read as it is now: a reload since the purchase
    /// arrived applies.
    public static func graceEnded(_ purchase: DiscoveredPurchase, holder: String?, settings: DiscoverySettings) -> GraceEnd {
        if let holder { return .settles(.joined(orderID: holder)) }
        guard settings.mode == .deliver else { return .settles(.recorded) }
        if let ignored = ignored(purchase) { return .settles(.ignored(ignored)) }
        guard settings.admits(purchase.productID) else { return .settles(.ignoredByProducts) }
        guard let account = purchase.accountToken else { return .settles(.noAccount) }
        return .becomesOrder(order(purchase, account: account, origin: .store))
    }

    /// What the phone's order `orderID`, verified for a purchase the daemon discovered (in
    /// `status`), does to it.
    public enum PhoneOrderMeets: Sendable, Hashable {
        /// The phone's order takes the purchase over: it is joined to that order.
        case takesOver
        /// The purchase became order `orderID` already: the phone's order ends `finished`,
        /// finisher `discovery`, reason `same_purchase_as <orderID>`; nothing is delivered.
        case samePurchase(as: String)
        /// Another order of the phone's holds it: the ordinary duplicate rules apply.
        case unaffected
    }

    public static func phoneOrder(_ orderID: String, verifiedFor status: Status) -> PhoneOrderMeets {
        switch status {
        case .becameOrder(let made) where made != orderID: .samePurchase(as: made)
        case .becameOrder, .joined: .unaffected
        case .waiting, .recorded, .noAccount, .ignoredByProducts, .ignored: .takesOver
        }
    }

    /// What `reconcilectl recover` does with one purchase a look-up found.
    public enum Recovery: Sendable, Hashable {
        /// Makes this order (no grace).
        case makes(DiscoveredOrder)
        /// Leaves the purchase, and why.
        case leaves(Left)
    }

    /// Why `recover` makes no order for a purchase.
    public enum Left: Sendable, Hashable, CustomStringConvertible {
        /// An order holds it already: running `recover` twice makes nothing new.
        case heldBy(orderID: String)
        case ignored(Ignored)
        /// Neither `--user` nor an account the app set.
        case noAccount
        /// The store does not say it is paid (pending, cancelled) or is refunding it.
        case notPaid(LookedUpPurchase.State)
        /// A license tester's purchase, and `AllowTestPurchases=no`.
        case testPurchase
        /// The order could not be taken in, and why (the configured verifier does not take its
        /// proof, say).
        case refused(String)

        /// A word for `recover --json`.
        public var code: String {
            switch self {
            case .heldBy: "held"
            case .ignored(let why): why == .revoked ? "refunded" : why.rawValue
            case .noAccount: "no_account"
            case .notPaid(let state): state.isRefund ? "refunded" : state.rawValue
            case .testPurchase: "test_purchase"
            case .refused: "refused"
            }
        }

        /// Why, in words a support person can act on.
        public var description: String {
            switch self {
            case .heldBy(let order): "order \(order) holds it already"
            case .ignored(.subscription): "a subscription: never recovered as an order"
            case .ignored(.revoked): "the store took the money back (refunded or revoked)"
            case .ignored(.unnamable): "its store id does not make a valid order id"
            case .noAccount: "the app set no account for it: run recover again with --user ID"
            case .notPaid(let state) where state.isRefund: "the store says \(state.rawValue): the money was taken back"
            case .notPaid(let state): "the store says \(state.rawValue), not purchased"
            case .testPurchase: "a license tester's test purchase, and [GooglePlay] AllowTestPurchases=no"
            case .refused(let why): "the order could not be taken in: \(why)"
            }
        }
    }

    /// `recover STORE_ORDER_ID [--user ID]` for one of its purchases: `holder` as in
    /// ``arrive(_:holder:known:settings:now:)``; `known`, its discovered status if any (an order
    /// it became holds it); `user`, the operator's `--user`, which wins over the purchase's own
    /// account. Refunded, voided and subscription purchases are never made orders.
    public static func recover(_ purchase: DiscoveredPurchase, holder: String?, known: Status?, user: String?) -> Recovery {
        if let holder { return .leaves(.heldBy(orderID: holder)) }
        if case .becameOrder(let made)? = known { return .leaves(.heldBy(orderID: made)) }
        if let ignored = ignored(purchase) { return .leaves(.ignored(ignored)) }
        guard let account = user ?? purchase.accountToken else { return .leaves(.noAccount) }
        return .makes(order(purchase, account: account, origin: .operator))
    }

    /// `recover` for a purchase a look-up found: as ``recover(_:holder:known:user:)``, and
    /// besides only what the store says is paid (a refund in progress or done, a pending or
    /// cancelled payment: left), a license tester's purchase only with `allowTestPurchases`.
    public static func recover(
        _ found: LookedUpPurchase, holder: String?, known: Status?, user: String?, allowTestPurchases: Bool
    ) -> Recovery {
        if let holder { return .leaves(.heldBy(orderID: holder)) }
        if case .becameOrder(let made)? = known { return .leaves(.heldBy(orderID: made)) }
        if found.purchase.isSubscription { return .leaves(.ignored(.subscription)) }
        guard found.state == .purchased else { return .leaves(.notPaid(found.state)) }
        if found.isTest && !allowTestPurchases { return .leaves(.testPurchase) }
        return recover(found.purchase, holder: nil, known: known, user: user)
    }

    /// Why `purchase` is not one to act on, if it is not.
    static func ignored(_ purchase: DiscoveredPurchase) -> Ignored? {
        if purchase.isSubscription { return .subscription }
        if purchase.revokedAt != nil { return .revoked }
        if purchase.orderID == nil { return .unnamable }
        return nil
    }

    /// The order `purchase` becomes, granted to `account`.
    static func order(_ purchase: DiscoveredPurchase, account: String, origin: DiscoveredOrder.Origin) -> DiscoveredOrder {
        DiscoveredOrder(
            submission: OrderSubmission(
                orderID: purchase.orderID!, productID: purchase.productID, proof: purchase.proof, applicationUsername: account,
                userID: purchase.profileID, createdAt: purchase.purchasedAt),
            origin: origin, via: purchase.via)
    }
}
