import Foundation
import ReconcileFoundation

/// The journal lines of purchases the phone never sent (DESIGN §5b): one when a store reports
/// one, one when its grace ends — each with the purchase's store key and product, never its
/// proof. `REASON=` holds the status word `reconcilectl discovered` prints.
public enum DiscoveryJournal {
    /// A store reported `purchase` (`via`: how, for the message); `arrival`: what keeping it did.
    public static func report(
        _ arrival: DiscoveryArrival, of purchase: DiscoveredPurchase, via: String, spoolFile: String? = nil, logger: Logger,
        counters: DiscoveryCounters = .process
    ) {
        let what = named(purchase)
        switch arrival {
        case .ignored: counters.count(purchase.via, "off")
        case .known: counters.count(purchase.via, "known")
        case .recorded(let status): counters.count(purchase.via, status.code)
        }
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
    public static func report(_ settlement: DiscoverySettlement, logger: Logger, counters: DiscoveryCounters = .process) {
        let purchase = settlement.purchase
        let what = named(purchase)
        let status = settlement.status
        counters.count(purchase.via, status.code)
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

    /// `reconcilectl lookup` by `actor`: the store order asked about and what the store gave.
    public static func lookedUp(_ id: StoreOrderID, purchases: [LookedUpPurchase], actor: String, logger: Logger) {
        let held = purchases.filter { $0.heldBy != nil }.count
        logger.info(
            "\(actor) looked up \(named(id)): \(Plural.count(purchases.count, "purchase")), \(held) held by stored orders",
            [.actor: actor, .count: String(purchases.count)])
    }

    /// `lookup` or `recover` (`verb`) by `actor` gave nothing: why.
    public static func lookupFailed(_ id: StoreOrderID, verb: String, why: String, actor: String, logger: Logger) {
        logger.notice("\(actor) \(verb) \(named(id)): \(why)", [.actor: actor, .reason: "lookup_failed"])
    }

    /// `reconcilectl recover` by `actor`: one line for each order made (`notice`, with its
    /// MESSAGE_ID) and for each purchase left (`info`, with why).
    public static func recovered(
        _ id: StoreOrderID, results: [RecoveredPurchase], actor: String, note: String?, logger: Logger, counters: DiscoveryCounters = .process
    ) {
        let noted = note.map { ": \($0)" } ?? ""
        for result in results {
            let purchase = result.found.purchase
            switch result.result {
            case .made: counters.count(.recover, DiscoveryRules.Status.becameOrder(orderID: "").code)
            case .left(let left): counters.count(.recover, "left_\(left.code)")
            }
            switch result.result {
            case .made(let orderID):
                logger.notice(
                    "\(actor) recovered \(named(purchase)) of \(named(id)) as order \(orderID)\(noted)", id: .orderRecovered,
                    [.orderID: orderID, .transactionID: purchase.transactionKey, .productID: purchase.productID, .actor: actor, .reason: "recovered"])
            case .left(let left):
                logger.info(
                    "\(actor) recover of \(named(id)) left \(named(purchase)): \(left.description)",
                    [.transactionID: purchase.transactionKey, .productID: purchase.productID, .actor: actor, .reason: left.code])
            }
        }
    }

    /// How the lines name a customer's store order.
    static func named(_ id: StoreOrderID) -> String {
        "\(id.store == .appStore ? "App Store" : "Google Play") order \(id.id)"
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
