import Foundation
import ReconcileFoundation

/// The journal lines of purchases the phone never sent (DESIGN §5b): one when a store reports
/// one, one when its grace ends — each with the purchase's store key and product, never its
/// proof. `REASON=` holds the status word `reconcilectl discovered` prints.
public enum DiscoveryJournal {
    /// A store reported `purchase` (`via`: how, for the message); `arrival`: what keeping it did.
    public static func report(
        _ arrival: DiscoveryArrival, of purchase: DiscoveredPurchase, via: String, spoolFile: String? = nil, logger: Logger
    ) {
        let what = named(purchase)
        switch arrival {
        case .ignored:
            logger.debug("\(what) (\(via)): [Discovery] Mode=off; not kept", [.transactionID: purchase.transactionKey, .spoolFile: spoolFile])
        case .known(let status):
            logger.debug(
                "\(what) (\(via)) was reported before; it stays \(status.code)",
                [.transactionID: purchase.transactionKey, .reason: status.code, .spoolFile: spoolFile])
        case .recorded(let status):
            let fields: KeyValuePairs<LogField, String?> = [
                .transactionID: purchase.transactionKey, .productID: purchase.productID, .orderID: status.orderID, .reason: status.code,
                .spoolFile: spoolFile,
            ]
            switch status {
            case .waiting(let until):
                logger.notice(
                    "\(what) (\(via)): no order holds it yet; it waits for the phone's order until \(RFC3339.format(until))",
                    id: .purchaseDiscovered, fields)
            case .joined(let orderID):
                logger.info("\(what) (\(via)) is held by order \(orderID); recorded on it", fields)
            case .ignored(let why):
                logger.info("\(what) (\(via)): not acted on (\(why.rawValue)); recorded", fields)
            default:
                logger.notice("\(what) (\(via)): \(status.code)", id: .purchaseDiscovered, fields)
            }
        }
    }

    /// The grace of a discovered purchase ended: what it became.
    public static func report(_ settlement: DiscoverySettlement, logger: Logger) {
        let purchase = settlement.purchase
        let what = named(purchase)
        let status = settlement.status
        let fields: KeyValuePairs<LogField, String?> = [
            .transactionID: purchase.transactionKey, .productID: purchase.productID, .orderID: status.orderID, .reason: status.code,
        ]
        switch status {
        case .becameOrder(let orderID):
            logger.notice(
                "\(what): no phone order came within the grace; it became order \(orderID), which is verified and delivered as any order",
                id: .discoveredOrderMade, fields)
        case .joined(let orderID):
            logger.info("\(what): the phone's order \(orderID) took it over", fields)
        case .recorded:
            logger.notice(
                "\(what): no phone order came within the grace; [Discovery] Mode=record, so no order is made (reconcilectl recover makes one)",
                id: .purchaseDiscovered, fields)
        case .noAccount:
            logger.warning(
                "\(what): no phone order came within the grace, and the app set no account at purchase; it cannot be granted to anyone: reconcilectl recover --user ID",
                id: .discoveredNoAccount, fields)
        case .ignoredByProducts:
            logger.info("\(what): [Discovery] Products= does not admit it; no order is made", fields)
        case .ignored(let why):
            logger.info("\(what): not acted on (\(why.rawValue))", fields)
        case .waiting:
            logger.debug("\(what): still waiting", fields)
        }
    }

    /// How the lines name a purchase: its store, key and product — never its proof.
    static func named(_ purchase: DiscoveredPurchase) -> String {
        "\(purchase.store == .appStore ? "App Store" : "Google Play") purchase \(purchase.transactionKey) of \(purchase.productID)"
    }
}

extension DiscoveryRules.Status {
    /// The order it names, if any.
    public var orderID: String? {
        switch self {
        case .joined(let orderID), .becameOrder(let orderID): orderID
        default: nil
        }
    }
}
