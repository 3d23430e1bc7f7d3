import Foundation
import ReconcileFoundation

/// Google Play's `Order` (`orders.get`, androidpublisher v3; DESIGN §5b), reduced to what a
/// support look-up shows and `recover` decides on: the purchase token, the order's state and its
/// line items. The token is then confirmed with `purchases.products.get`; nothing here alone
/// makes an order.
public struct PlayOrder: Sendable, Hashable {
    /// The order's state as Google names it (`PROCESSED`, `PENDING`, `CANCELED`,
    /// `PENDING_REFUND`, `PARTIALLY_REFUNDED`, `REFUNDED`); another name is kept as it came.
    public enum State: Sendable, Hashable {
        case processed, pending, canceled, pendingRefund, partiallyRefunded, refunded
        case other(String)

        init(_ name: String) {
            switch name {
            case "PROCESSED": self = .processed
            case "PENDING": self = .pending
            case "CANCELED": self = .canceled
            case "PENDING_REFUND": self = .pendingRefund
            case "PARTIALLY_REFUNDED": self = .partiallyRefunded
            case "REFUNDED": self = .refunded
            default: self = .other(name)
            }
        }

        /// Money was taken back, wholly or in part, or is being.
        public var isRefund: Bool {
            switch self {
            case .pendingRefund, .partiallyRefunded, .refunded: true
            default: false
            }
        }
    }

    /// One product of the order.
    public struct LineItem: Sendable, Hashable {
        public var productID: String
        /// A subscription's line item (`subscriptionDetails`): never an order of its own.
        public var isSubscription: Bool
    }

    public var orderID: String
    public var purchaseToken: String
    public var state: State
    public var lineItems: [LineItem]
    public var createdAt: Date?
    public var lastEventAt: Date?
    /// When the first refund happened (`orderHistory.refundEvents`, else
    /// `partialRefundEvents`), when there was one.
    public var refundedAt: Date?

    /// When the money went back, for an order in a refund state: its first refund event, else
    /// its last event; `nil` for an order not refunded.
    public var refundTime: Date? { state.isRefund ? (refundedAt ?? lastEventAt) : nil }

    /// Why a body is not an order.
    public struct Unparseable: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses an `Order` body. Strict where a decision rests (the id, the token, the state, each
    /// line item's product); lenient elsewhere.
    public static func parse(_ body: [UInt8]) throws(Unparseable) -> PlayOrder {
        let document: JSONValue
        do {
            document = try JSONParser(allowsDuplicateKeys: false).parse(body)
        } catch {
            throw Unparseable(description: "the order is not JSON (\(error.message))")
        }
        guard case .object(let object) = document else {
            throw Unparseable(description: "the order is a JSON \(document.typeName), not an object")
        }
        func text(_ key: String) throws(Unparseable) -> String {
            guard let value = object[key]?.stringValue, !value.isEmpty else { throw Unparseable(description: "the order has no \"\(key)\"") }
            return value
        }
        let orderID = try text("orderId")
        let token = try text("purchaseToken")
        guard token.utf8.count <= OrderFileParser.purchaseTokenMaximumLength, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Unparseable(description: "the order's \"purchaseToken\" is not a purchase token")
        }
        let state = State(try text("state"))
        guard case .array(let items)? = object["lineItems"], !items.isEmpty, items.count <= 1000 else {
            throw Unparseable(description: "the order has no \"lineItems\"")
        }
        let lineItems = try items.map { (value) throws(Unparseable) -> LineItem in
            guard case .object(let item) = value, let product = item["productId"]?.stringValue, !product.isEmpty else {
                throw Unparseable(description: "a line item of the order has no \"productId\"")
            }
            let subscription = item["subscriptionDetails"].map { $0 != .null } ?? false
            return LineItem(productID: product, isSubscription: subscription)
        }
        let history = object["orderHistory"]?.objectValue
        let refunds = (history?["refundEvents"]?.arrayValue ?? []) + (history?["partialRefundEvents"]?.arrayValue ?? [])
        let refundTimes = refunds.compactMap { $0.objectValue?["eventTime"]?.stringValue.flatMap(RFC3339.parse) }
        return PlayOrder(
            orderID: orderID, purchaseToken: token, state: state, lineItems: lineItems,
            createdAt: object["createTime"]?.stringValue.flatMap(RFC3339.parse), lastEventAt: object["lastEventTime"]?.stringValue.flatMap(RFC3339.parse),
            refundedAt: refundTimes.min())
    }
}
