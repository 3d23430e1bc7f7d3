import Foundation
import ReconcileFoundation
import Testing
@testable import ReconcileCore

/// Purchases the stores report on their own (DESIGN §5b): recorded on the order that holds
/// them, waiting out the grace for the phone's order otherwise, then made orders (`Mode=deliver`)
/// for the account the app set, or left to a person; a late phone order never grants twice.
@Suite("Discovery rules")
struct DiscoveryRulesTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)
    static let signed = "eyJhbGciOiJFUzI1NiJ9.c2lnbmVkLXRyYW5zYWN0aW9uLXNlY3JldA.c2ln"
    static let token = "play-token-SECRET-0123456789"

    static func apple(
        _ transactionID: String = "2000000123", account: String? = "3f1d6c52-8a0e-4c52-9a4e-5e0d1c7b2a11", product: String = "com.example.gems.100",
        subscription: Bool = false, revokedAt: Date? = nil
    ) -> DiscoveredPurchase {
        DiscoveredPurchase(
            store: .appStore, transactionKey: transactionID, productID: product, purchasedAt: now.addingTimeInterval(-30),
            environment: "Production", accountToken: account, proof: OrderProof(transactionID: transactionID, signedTransaction: signed),
            isSubscription: subscription, revokedAt: revokedAt, via: .history)
    }

    static func play(orderID: String? = "GPA.3312-5479-2201-55123", account: String? = "acct-77", profile: String? = "profile-9") -> DiscoveredPurchase {
        DiscoveredPurchase(
            store: .googlePlay, transactionKey: PlayMatcher.claimKey(orderID: orderID, tokenDigest: String(repeating: "ab", count: 32)),
            productID: "gems_100", accountToken: account, profileID: profile,
            proof: OrderProof(purchaseToken: token, packageName: "com.example.app"), via: .pubsub)
    }

    static let deliver = DiscoverySettings(mode: .deliver)

    // MARK: - Arrival

    @Test("Mode=off records nothing; a purchase known already is not changed by a second report")
    func nothingRecorded() {
        #expect(DiscoveryRules.arrive(Self.apple(), holder: nil, known: nil, settings: DiscoverySettings(mode: .off), now: Self.now) == nil)
        #expect(DiscoveryRules.arrive(Self.apple(), holder: "A1", known: .recorded, settings: Self.deliver, now: Self.now) == nil)
    }

    @Test("held by an order: recorded on it, whatever the mode")
    func heldByAnOrder() {
        for mode in [DiscoverySettings.Mode.record, .deliver] {
            #expect(DiscoveryRules.arrive(Self.apple(), holder: "A1", known: nil, settings: DiscoverySettings(mode: mode), now: Self.now) == .joined(orderID: "A1"))
        }
    }

    @Test("held by nobody: waits out Grace= for the phone's own order")
    func waits() {
        let settings = DiscoverySettings(mode: .deliver, grace: .seconds(600))
        #expect(DiscoveryRules.arrive(Self.apple(), holder: nil, known: nil, settings: settings, now: Self.now) == .waiting(until: Self.now.addingTimeInterval(600)))
        #expect(DiscoverySettings().grace == .seconds(900), "DESIGN §5b: 15min by default")
        #expect(DiscoverySettings().mode == .record)
    }

    @Test("a subscription, a purchase refunded already, an id that makes no order id: ignored, each with its word")
    func ignored() {
        let cases: [(DiscoveredPurchase, String)] = [
            (Self.apple(subscription: true), "ignored_subscription"),
            (Self.apple(revokedAt: Self.now), "ignored_revoked"),
            (Self.apple("2000 0001"), "ignored_unnamable"),
        ]
        for (purchase, code) in cases {
            #expect(DiscoveryRules.arrive(purchase, holder: nil, known: nil, settings: Self.deliver, now: Self.now)?.code == code, "\(purchase)")
        }
    }

    // MARK: - The grace ends

    @Test("Mode=deliver: an order named apple:<transactionId>, for the app's account, with the signed transaction as proof, origin store")
    func becomesAppleOrder() throws {
        let end = DiscoveryRules.graceEnded(Self.apple(), holder: nil, settings: Self.deliver)
        guard case .becomesOrder(let order) = end else {
            Issue.record("no order: \(end)")
            return
        }
        #expect(order.origin == .store)
        #expect(order.submission.orderID == "apple:2000000123")
        #expect(order.submission.productID == "com.example.gems.100")
        #expect(order.submission.applicationUsername == "3f1d6c52-8a0e-4c52-9a4e-5e0d1c7b2a11")
        #expect(order.submission.proof == OrderProof(transactionID: "2000000123", signedTransaction: Self.signed))
        #expect(order.submission.createdAt == Self.now.addingTimeInterval(-30))
        #expect(order.submission.proof.isUsable(by: .appstore))
    }

    @Test("a Play purchase becomes google:<orderId> (the token's digest without one), its profile the user id, its token the proof")
    func becomesPlayOrder() {
        guard case .becomesOrder(let order) = DiscoveryRules.graceEnded(Self.play(), holder: nil, settings: Self.deliver) else {
            Issue.record("no order")
            return
        }
        #expect(order.submission.orderID == "google:GPA.3312-5479-2201-55123")
        #expect(order.submission.applicationUsername == "acct-77")
        #expect(order.submission.userID == "profile-9")
        #expect(order.submission.proof.purchaseToken == Self.token && order.submission.proof.isGooglePlay)
        guard case .becomesOrder(let promo) = DiscoveryRules.graceEnded(Self.play(orderID: nil), holder: nil, settings: Self.deliver) else {
            Issue.record("no order for a purchase without an order id")
            return
        }
        #expect(promo.submission.orderID == "google-token:" + String(repeating: "ab", count: 32))
        #expect(OrderFileParser.isValidOrderID(promo.submission.orderID))
    }

    @Test("the phone's order verified during the grace: joined to it at the end, no order made")
    func phoneOrderCameInTime() {
        #expect(DiscoveryRules.graceEnded(Self.apple(), holder: "M-42", settings: Self.deliver) == .settles(.joined(orderID: "M-42")))
    }

    @Test("Mode=record after the grace: recorded; a reload to deliver since the purchase came applies")
    func recordMode() {
        #expect(DiscoveryRules.graceEnded(Self.apple(), holder: nil, settings: DiscoverySettings(mode: .record)) == .settles(.recorded))
        #expect(DiscoveryRules.graceEnded(Self.apple(), holder: nil, settings: DiscoverySettings(mode: .off)) == .settles(.recorded))
        if case .becomesOrder = DiscoveryRules.graceEnded(Self.apple(), holder: nil, settings: Self.deliver) {} else {
            Issue.record("deliver makes the order")
        }
    }

    @Test("no account: escalated no_account for a person; a product Products= does not admit: ignored_product")
    func leftToAPerson() throws {
        #expect(DiscoveryRules.graceEnded(Self.apple(account: nil), holder: nil, settings: Self.deliver) == .settles(.noAccount))
        let gems = DiscoverySettings(mode: .deliver, products: [try ShellGlob("com.example.gems.*")])
        #expect(DiscoveryRules.graceEnded(Self.apple(product: "com.example.coins.5"), holder: nil, settings: gems) == .settles(.ignoredByProducts))
        if case .becomesOrder = DiscoveryRules.graceEnded(Self.apple(), holder: nil, settings: gems) {} else {
            Issue.record("com.example.gems.100 is admitted")
        }
        #expect(DiscoveryRules.graceEnded(Self.apple(account: nil), holder: nil, settings: gems).status?.code == "no_account")
    }

    // MARK: - The late phone order

    @Test("the phone's order verified for a purchase that became another order: same_purchase_as it; before that, it takes it over")
    func latePhoneOrder() {
        #expect(DiscoveryRules.phoneOrder("M-42", verifiedFor: .becameOrder(orderID: "apple:2000000123")) == .samePurchase(as: "apple:2000000123"))
        for status: DiscoveryRules.Status in [.waiting(until: Self.now), .recorded, .noAccount, .ignoredByProducts, .ignored(.unnamable)] {
            #expect(DiscoveryRules.phoneOrder("M-42", verifiedFor: status) == .takesOver, "\(status)")
        }
        // The order the purchase became, verified itself; another phone order of a joined purchase.
        #expect(DiscoveryRules.phoneOrder("apple:2000000123", verifiedFor: .becameOrder(orderID: "apple:2000000123")) == .unaffected)
        #expect(DiscoveryRules.phoneOrder("M-43", verifiedFor: .joined(orderID: "M-42")) == .unaffected)
    }

    // MARK: - recover

    @Test("recover makes an operator's order at once; --user wins over the app's account; twice makes nothing new")
    func recover() {
        guard case .makes(let order) = DiscoveryRules.recover(Self.apple(account: nil), holder: nil, known: nil, user: "user-5") else {
            Issue.record("no order")
            return
        }
        #expect(order.origin == .operator && order.submission.applicationUsername == "user-5")
        guard case .makes(let own) = DiscoveryRules.recover(Self.apple(), holder: nil, known: .waiting(until: Self.now), user: nil) else {
            Issue.record("a waiting purchase is recovered at once")
            return
        }
        #expect(own.submission.applicationUsername == "3f1d6c52-8a0e-4c52-9a4e-5e0d1c7b2a11")
        #expect(DiscoveryRules.recover(Self.apple(), holder: nil, known: .becameOrder(orderID: "apple:2000000123"), user: nil)
            == .leaves(.heldBy(orderID: "apple:2000000123")))
        #expect(DiscoveryRules.recover(Self.apple(), holder: "M-42", known: nil, user: "user-5") == .leaves(.heldBy(orderID: "M-42")))
    }

    @Test("recover refuses a refunded purchase and a subscription, and one without an account or --user")
    func recoverRefuses() {
        #expect(DiscoveryRules.recover(Self.apple(revokedAt: Self.now), holder: nil, known: nil, user: "u") == .leaves(.ignored(.revoked)))
        #expect(DiscoveryRules.recover(Self.apple(subscription: true), holder: nil, known: nil, user: "u") == .leaves(.ignored(.subscription)))
        #expect(DiscoveryRules.recover(Self.apple(account: nil), holder: nil, known: nil, user: nil) == .leaves(.noAccount))
    }

    // MARK: - Words and secrets

    @Test("each status has its own word")
    func codes() {
        let statuses: [DiscoveryRules.Status] = [
            .waiting(until: Self.now), .joined(orderID: "A"), .becameOrder(orderID: "A"), .recorded, .noAccount, .ignoredByProducts,
        ] + DiscoveryRules.Ignored.allCases.map { .ignored($0) }
        #expect(statuses.map(\.code) == [
            "waiting", "joined", "became_order", "recorded", "no_account", "ignored_product", "ignored_subscription", "ignored_revoked",
            "ignored_unnamable",
        ])
        // Read back from its word, with the time and order a store keeps beside it.
        for status in statuses {
            #expect(DiscoveryRules.Status(code: status.code, graceUntil: Self.now, orderID: "A") == status)
        }
        #expect(DiscoveryRules.Status(code: "waiting", graceUntil: nil, orderID: nil) == nil, "waiting without its grace end")
        #expect(DiscoveryRules.Status(code: "joined", graceUntil: Self.now, orderID: nil) == nil, "joined without its order")
        #expect(DiscoveryRules.Status(code: "ignored_everything", graceUntil: nil, orderID: nil) == nil)
    }

    @Test("a discovered purchase's description never shows its proof")
    func noProofInDescription() {
        for purchase in [Self.apple(), Self.play()] {
            #expect(!purchase.description.contains(Self.signed) && !purchase.description.contains(Self.token), "\(purchase)")
            #expect(purchase.description.contains(purchase.transactionKey))
        }
    }

    @Test("the order a purchase becomes is taken in as an order file would say it: it parses back to the same submission, origin and source named")
    func candidateParsesBack() throws {
        for (purchase, origin) in [(Self.apple(), OrderOrigin.store), (Self.play(), .operator)] {
            let order = try #require(DiscoveryRules.graceEnded(purchase, holder: nil, settings: Self.deliver).order ?? {
                if case .makes(let order) = DiscoveryRules.recover(purchase, holder: nil, known: nil, user: nil) { return order }
                return nil
            }())
            var made = order
            made.origin = origin
            let candidate = made.candidate { "digest of \($0.count) bytes" }
            #expect(try OrderFileParser().parse(candidate.raw) == made.submission)
            #expect(candidate.origin == origin && candidate.contentHash == "digest of \(candidate.raw.count) bytes")
            #expect(String(decoding: candidate.raw, as: UTF8.self).contains("\"origin\":\"\(origin.rawValue)\""))
            #expect(candidate.fileName.contains(purchase.via.rawValue))
        }
    }
}

extension DiscoveryRules.GraceEnd {
    /// The order it makes, if it makes one.
    var order: DiscoveryRules.DiscoveredOrder? {
        if case .becomesOrder(let order) = self { return order }
        return nil
    }

    /// The status it settles on, if it makes no order.
    var status: DiscoveryRules.Status? {
        if case .settles(let status) = self { return status }
        return nil
    }
}
