import Foundation
import ReconcileCore
import ReconcileFoundation

/// Delivers verified grants to the merchant's backend (`[Delivery] URL=`, DESIGN §5): the store's
/// product, quantity and transaction (Apple's transaction id, Google's `orderId`), never the
/// client's amount, and which store it was (`app_store`, `google_play`; for Google Play the
/// purchase's `package_name`). 2xx or 409 (already delivered) finish the order.
public struct DeliveryClient: OrderVerifier {
    public var work: Set<WorkKind> { [.deliver] }
    public var endpoint: EndpointSettings
    public var transport: any HTTPTransport
    /// `[GooglePlay] PackageName=`: a Google Play grant of another package (verified by an
    /// older version) is escalated `foreign_package`, not delivered; empty: not checked.
    public var playPackages: [String] = []

    public init(endpoint: EndpointSettings, transport: any HTTPTransport) {
        self.endpoint = endpoint
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .delivery }

    static func body(_ order: ClaimedOrder) -> [UInt8] {
        let grant = order.grant ?? Grant()
        return JSONWriter.bytes(.object(JSONObject([
            "order_id": .string(order.orderID), "product_id": .string(grant.productID ?? order.productID),
            "transaction_id": .string(orNull: grant.transactionID), "original_transaction_id": .string(orNull: grant.originalTransactionID),
            "quantity": .integer(grant.quantity ?? 1), "purchase_date_ms": grant.purchaseDateMilliseconds.map(JSONValue.integer) ?? .null,
            "environment": .string(orNull: grant.environment), "user_id": .string(orNull: order.userID),
            "application_username": .string(orNull: order.applicationUsername),
            "store": .string(PurchaseStore(order.proof).rawValue),
            // Google Play: which app the purchase was made in (null for the App Store).
            "package_name": .string(orNull: PurchaseStore(order.proof) == .googlePlay ? order.proof.packageName : nil),
            // An order the phone never sent (DESIGN §5b): `store` or `operator`; absent for the
            // phone's own, whose body is what it always was.
            "origin": order.origin.map { .string($0.rawValue) },
        ])))
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        if PurchaseStore(order.proof) == .googlePlay, let package = order.proof.packageName, !playPackages.isEmpty, !playPackages.contains(package) {
            return VerifierOutcome(
                records: [],
                verdict: .escalate(Reason(.foreignPackage, detail: ConfiguredVerifiers.foreignPackageDetail(package, configured: playPackages))))
        }
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(endpoint.orderRequest(order, body: Self.body(order)), to: .delivery, judge: Self.judge)
        guard case .verdict(let verdict) = meaning else { preconditionFailure("the delivery protocol has no further answer to read") }
        return VerifierOutcome(records: [record], verdict: verdict)
    }

    /// What a delivery answer means for the order and its endpoint.
    static func judge(_ result: HTTPExchangeResult, now: Date) -> EndpointExchange.Judgement<Never> {
        let (verdict, observation) = MerchantAnswerClassifier.classifyDelivery(result, now: now)
        let rateLimited = result.response?.status == 429
        switch verdict {
        case .delivered:
            return .init(.verdict(.delivered), observation: observation)
        case .transient(let reason, let after):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: observation, retryAfter: after,
                rateLimited: rateLimited, detail: reason.description)
        case .escalate(let reason):
            return .init(.verdict(.escalate(Reason(.deliveryRefused, detail: reason.description))), observation: observation, detail: reason.description)
        case .configuration(let reason):
            return .init(.verdict(.configuration(reason)), observation: observation, detail: reason.description)
        }
    }
}
