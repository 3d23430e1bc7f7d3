import Foundation
import ReconcileCore
import ReconcileFoundation
import Testing
import TestSupport

/// Purchases the phone never sent as every store keeps them (DESIGN §5b), through the protocol
/// alone: kept once by their transaction key, joined to the order holding their transaction,
/// waiting out the grace otherwise, then recorded, escalated or made an order taken in like a
/// spool file. Runs against each store in ``ContractStore/all``.
@Suite("Store contract: discovered purchases", .postgreSQLTurn)
struct DiscoveryContractTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }
    let owner = "node-a:1:x"
    static let signed = "eyJhbGciOiJFUzI1NiJ9.c2lnbmVkLXRyYW5zYWN0aW9uLXNlY3JldA.c2ln"
    static let account = "3f1d6c52-8a0e-4c52-9a4e-5e0d1c7b2a11"
    static let deliver = DiscoverySettings(mode: .deliver)
    /// The content hash, as the daemon's SHA-256 would name the content (the store only compares).
    static let digest: @Sendable ([UInt8]) -> String = { "test:" + String(decoding: $0, as: UTF8.self) }

    static func apple(_ transactionID: String, account: String? = account, product: String = "gems") -> DiscoveredPurchase {
        DiscoveredPurchase(
            store: .appStore, transactionKey: transactionID, productID: product, purchasedAt: t0.addingTimeInterval(-30.5),
            environment: "Production", accountToken: account, proof: OrderProof(transactionID: transactionID, signedTransaction: signed),
            via: .history)
    }

    static func play(token: String, orderID: String) -> DiscoveredPurchase {
        DiscoveredPurchase(
            store: .googlePlay, transactionKey: PlayMatcher.claimKey(orderID: orderID, tokenDigest: String(repeating: "ab", count: 32)),
            productID: "gems_100", accountToken: "acct-77", profileID: "profile-9",
            proof: OrderProof(purchaseToken: token, packageName: "com.example.app"), via: .pubsub)
    }

    func candidate(_ orderID: String, receipt: String? = "QUJD", transactionID: String? = nil, purchaseToken: String? = nil) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(
            orderID, product: "gems", receipt: receipt, transactionID: transactionID, extra: purchaseToken.map { "\"purchase_token\":\"\($0)\"" } ?? "")
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    func discoveryStore(_ opened: OpenedStore) throws -> any DiscoveryStore {
        opened.store  // every OrderStore keeps discovered purchases
    }

    @Test("a purchase no order holds waits out the grace; a second report changes nothing; kept exactly as reported", arguments: ContractStore.all)
    func waits(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = try discoveryStore(opened)
        let purchase = Self.apple("2000000123")
        let until = t0 + 900
        #expect(try store.nextGraceEnd() == nil)
        #expect(try store.recordDiscovered([purchase], settings: Self.deliver, now: t0) == [.recorded(.waiting(until: until))])
        // Reported again (history and a file, or another node): known, unchanged.
        #expect(try store.recordDiscovered([purchase], settings: Self.deliver, now: t0 + 5) == [.known(.waiting(until: until))])
        #expect(try store.nextGraceEnd() == until)
        let listed = try store.discoveredPurchases(limit: 10)
        #expect(listed.count == 1)
        let kept = try #require(listed.first)
        // Times kept to the millisecond.
        var expected = purchase
        expected.purchasedAt = Date(epochMilliseconds: purchase.purchasedAt!.epochMilliseconds)
        #expect(kept.purchase == expected && kept.status == .waiting(until: until) && kept.discoveredAt == t0)
        // Before the grace ends nothing is settled.
        #expect(try store.settleDiscovered(settings: Self.deliver, verifiers: .init(kind: .appstore), now: until - 1, limit: 10, digest: Self.digest).isEmpty)
        // Mode=off keeps nothing.
        #expect(try store.recordDiscovered([Self.apple("2000000999")], settings: DiscoverySettings(mode: .off), now: t0) == [.ignored])
        #expect(try store.discoveredPurchases(limit: 10).count == 1)
    }

    @Test("a purchase whose transaction an order holds is joined to it: claimed, carried by an order not verified yet, or its purchase token", arguments: ContractStore.all)
    func joined(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        // Claimed: verified for transaction 500.
        _ = try store.ingest([candidate("F1")], verifierKind: .apple, now: t0)
        let claimed = try #require(try store.claimDue(.verify, now: t0, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true).first)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "500", originalTransactionID: "500", purchaseDateMilliseconds: 1)]
        let record = AttemptRecord(endpoint: .production, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)
        _ = try store.complete(
            [AttemptCompletion(order: claimed, records: [record], resolution: .match(items: items, environment: "Production", finishes: true), charged: true)],
            owner: owner, now: t0 + 1)
        // Not verified yet: an order carrying the transaction id, and a Play order by its token.
        _ = try store.ingest([candidate("P2", receipt: nil, transactionID: "600")], verifiers: ConfiguredVerifiers(kind: nil), now: t0)
        _ = try store.ingest(
            [candidate("G3", receipt: nil, purchaseToken: "token-G3")], verifiers: ConfiguredVerifiers(kind: nil, googlePlay: true), now: t0)
        let arrivals = try discovery.recordDiscovered(
            [Self.apple("500"), Self.apple("600"), Self.play(token: "token-G3", orderID: "GPA.1"), Self.apple("700")], settings: Self.deliver, now: t0 + 2)
        #expect(arrivals == [
            .recorded(.joined(orderID: "F1")), .recorded(.joined(orderID: "P2")), .recorded(.joined(orderID: "G3")),
            .recorded(.waiting(until: t0 + 2 + 900)),
        ])
        #expect(Set(try discovery.discoveredPurchases(limit: 10).map(\.status)) == Set(arrivals.compactMap {
            if case .recorded(let status) = $0 { status } else { nil }
        }))
    }

    @Test("after the grace: an order that came meanwhile takes it; Mode=record records; without an account or outside Products= a person decides", arguments: ContractStore.all)
    func settles(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        let purchases = [
            Self.apple("800"), Self.apple("801"), Self.apple("802", account: nil), Self.apple("803", product: "coins"),
        ]
        let deliverGems = DiscoverySettings(mode: .deliver, products: [try ShellGlob("gems")])
        _ = try discovery.recordDiscovered(purchases, settings: deliverGems, now: t0)
        // The phone's order for 800 arrives late but inside the grace.
        _ = try store.ingest([candidate("PHONE-800", receipt: nil, transactionID: "800")], verifiers: ConfiguredVerifiers(kind: nil), now: t0 + 60)
        let recordOnly = DiscoverySettings(mode: .record)
        let settled = try discovery.settleDiscovered(
            settings: recordOnly, verifiers: .init(kind: .appstore), now: t0 + 900, limit: 10, digest: Self.digest)
        #expect(settled.map(\.status) == [.joined(orderID: "PHONE-800"), .recorded, .recorded, .recorded])
        #expect(settled.allSatisfy { $0.ingest == nil })
        #expect(try discovery.nextGraceEnd() == nil)
        #expect(try store.order(id: "apple:801") == nil, "Mode=record makes no order")

        // The same three, recorded again on a store with Mode=deliver and Products=gems.
        let other = try await kind.open()
        defer { other.close() }
        let second = try discoveryStore(other)
        _ = try second.recordDiscovered(Array(purchases.dropFirst()), settings: deliverGems, now: t0)
        let delivered = try second.settleDiscovered(settings: deliverGems, verifiers: .init(kind: .appstore), now: t0 + 900, limit: 10, digest: Self.digest)
        #expect(delivered.map(\.status) == [.becameOrder(orderID: "apple:801"), .noAccount, .ignoredByProducts])
        #expect(delivered.map(\.ingest) == [.accepted(.pending), nil, nil])
    }

    @Test("with Mode=deliver it becomes order apple:<transaction> for the app's account, origin store, taken in once; settling again makes nothing", arguments: ContractStore.all)
    func becomesOrder(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        _ = try discovery.recordDiscovered([Self.apple("900")], settings: Self.deliver, now: t0)
        // At most `limit` a call; the rest at the next.
        _ = try discovery.recordDiscovered([Self.apple("901")], settings: Self.deliver, now: t0 + 1)
        let first = try discovery.settleDiscovered(settings: Self.deliver, verifiers: .init(kind: .appstore), now: t0 + 1000, limit: 1, digest: Self.digest)
        #expect(first.map(\.status) == [.becameOrder(orderID: "apple:900")])
        let order = try #require(try store.order(id: "apple:900"))
        #expect(order.origin == .store && order.state == .pending && order.applicationUsername == Self.account && order.productID == "gems")
        #expect(order.proof.signedTransaction == Self.signed && order.proof.transactionID == "900")
        #expect(order.createdAt == Date(epochMilliseconds: (t0 - 30.5).epochMilliseconds))
        let history = try store.history(orderID: "apple:900")
        #expect(history.count == 1 && history[0].detail == "from a purchase the store reported (history)")
        // The phone's own orders have none.
        _ = try store.ingest([candidate("PHONE-1")], verifierKind: .apple, now: t0)
        #expect(try store.order(id: "PHONE-1")?.origin == nil)
        let rest = try discovery.settleDiscovered(settings: Self.deliver, verifiers: .init(kind: .appstore), now: t0 + 1000, limit: 10, digest: Self.digest)
        #expect(rest.map(\.status) == [.becameOrder(orderID: "apple:901")])
        #expect(try discovery.settleDiscovered(settings: Self.deliver, verifiers: .init(kind: .appstore), now: t0 + 2000, limit: 10, digest: Self.digest).isEmpty)
        #expect(try discovery.discoveredPurchases(limit: 10).map(\.status) == [.becameOrder(orderID: "apple:901"), .becameOrder(orderID: "apple:900")])
        // A later report of the same purchase finds it held by the order it became.
        #expect(try discovery.recordDiscovered([Self.apple("900")], settings: Self.deliver, now: t0 + 3000) == [.known(.becameOrder(orderID: "apple:900"))])
    }

    @Test("the late phone order for a purchase that became an order finishes same_purchase_as it, before or after that order's own claim", arguments: ContractStore.all)
    func latePhoneOrder(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        _ = try discovery.recordDiscovered([Self.apple("950"), Self.apple("951")], settings: Self.deliver, now: t0)
        _ = try discovery.settleDiscovered(settings: Self.deliver, verifiers: .init(kind: .appstore), now: t0 + 900, limit: 10, digest: Self.digest)
        // The phone's orders, with receipts only (nothing told the store their transactions).
        _ = try store.ingest([candidate("PHONE-950"), candidate("PHONE-951")], verifierKind: .apple, now: t0 + 901)
        let record = AttemptRecord(endpoint: .production, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: t0)
        // All four leased at once; their answers come back one by one, in the order below.
        let claimed = try store.claimDue(.verify, now: t0 + 901, limit: 10, owner: owner, leaseUntil: t0 + 1000, charge: true)
        #expect(Set(claimed.map(\.orderID)) == ["apple:950", "apple:951", "PHONE-950", "PHONE-951"])
        func verify(_ orderID: String, transaction: String, at now: Date) throws -> CompletionResult {
            let order = try #require(claimed.first { $0.orderID == orderID })
            // Bought by the account the app set, which the made order is granted to.
            let items = [AppleReceiptItem(
                productID: "gems", transactionID: transaction, originalTransactionID: transaction, purchaseDateMilliseconds: 1,
                appAccountToken: Self.account)]
            let results = try store.complete(
                [AttemptCompletion(order: order, records: [record], resolution: .match(items: items, environment: "Production", finishes: true), charged: true)],
                owner: owner, now: now)
            return try #require(results.first)
        }
        // 950: its made order verified first and claimed the transaction.
        #expect(try verify("apple:950", transaction: "950", at: t0 + 902).to == .finished)
        let late = try verify("PHONE-950", transaction: "950", at: t0 + 903)
        #expect(late.to == .finished && late.reason == Reason(.samePurchaseAs, detail: "apple:950"))
        #expect(try store.order(id: "PHONE-950")?.finishedBy == .discovery)
        // 951: the phone's order verifies before the made one, which then claims it as its own.
        let early = try verify("PHONE-951", transaction: "951", at: t0 + 904)
        #expect(early.to == .finished && early.reason == Reason(.samePurchaseAs, detail: "apple:951"))
        let made = try verify("apple:951", transaction: "951", at: t0 + 905)
        #expect(made.to == .finished && made.reason.code == .verified)
        #expect(try store.order(id: "apple:951")?.finishedBy == .verifier)
        // Each made order names the phone's order that came late for it (show), and only that one.
        #expect(try store.samePurchaseOrders(as: "apple:950") == ["PHONE-950"])
        #expect(try store.samePurchaseOrders(as: "apple:951") == ["PHONE-951"])
        #expect(try store.samePurchaseOrders(as: "PHONE-950").isEmpty)
    }

    @Test("recover makes order apple:<transaction> (origin operator) once; a second run, a waiting one and a phone order's are held; refunds and subscriptions are left", arguments: ContractStore.all)
    func recover(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        let verifiers = ConfiguredVerifiers(kind: .appstore)
        func found(_ purchase: DiscoveredPurchase, state: LookedUpPurchase.State = .purchased) -> LookedUpPurchase {
            var purchase = purchase
            purchase.via = .recover
            return LookedUpPurchase(purchase: purchase, state: state)
        }
        // 700 waits out its grace (no account); 701 is carried by a phone order; 702 is new;
        // 703 refunded; 704 a subscription.
        _ = try discovery.recordDiscovered([Self.apple("700", account: nil)], settings: Self.deliver, now: t0)
        _ = try store.ingest([candidate("PHONE-701", receipt: nil, transactionID: "701")], verifierKind: .appstore, now: t0)
        var subscription = Self.apple("704")
        subscription.isSubscription = true
        let asked = [found(Self.apple("700", account: nil)), found(Self.apple("701")), found(Self.apple("702")), found(Self.apple("703"), state: .refunded), found(subscription)]
        let looked = try discovery.holdings(of: asked)
        #expect(looked.map(\.heldBy) == [nil, "PHONE-701", nil, nil, nil])
        #expect(looked[0].discovered == .waiting(until: t0 + 900))
        // No --user: the purchase without an account is left for one.
        let first = try discovery.recover(asked, user: nil, allowTestPurchases: false, verifiers: verifiers, now: t0 + 10, digest: Self.digest)
        #expect(first.map(\.result) == [
            .left(.noAccount), .left(.heldBy(orderID: "PHONE-701")), .made(orderID: "apple:702"), .left(.notPaid(.refunded)), .left(.ignored(.subscription)),
        ])
        let made = try #require(try store.order(id: "apple:702"))
        #expect(made.origin == .operator && made.state == .pending && made.applicationUsername == Self.account && made.proof.signedTransaction == Self.signed)
        #expect(try store.history(orderID: "apple:702").first?.detail == "from reconcilectl recover (recover)")
        // With --user: the one without an account is made, granted to that user; the rest is held or left as before.
        let second = try discovery.recover(asked, user: "user-5", allowTestPurchases: false, verifiers: verifiers, now: t0 + 20, digest: Self.digest)
        #expect(second.map(\.result) == [
            .made(orderID: "apple:700"), .left(.heldBy(orderID: "PHONE-701")), .left(.heldBy(orderID: "apple:702")), .left(.notPaid(.refunded)),
            .left(.ignored(.subscription)),
        ])
        #expect(try store.order(id: "apple:700")?.applicationUsername == "user-5")
        // Its grace ending now settles nothing: it became an order.
        #expect(try discovery.settleDiscovered(settings: Self.deliver, verifiers: verifiers, now: t0 + 1000, limit: 10, digest: Self.digest).isEmpty)
        let statuses = Dictionary(uniqueKeysWithValues: try discovery.discoveredPurchases(limit: 10).map { ($0.purchase.transactionKey, $0.status) })
        #expect(statuses == ["700": .becameOrder(orderID: "apple:700"), "702": .becameOrder(orderID: "apple:702")])
        // A third run makes nothing new.
        let third = try discovery.recover(asked, user: "user-5", allowTestPurchases: false, verifiers: verifiers, now: t0 + 30, digest: Self.digest)
        #expect(!third.contains { if case .made = $0.result { true } else { false } })
        #expect(try discovery.holdings(of: asked).map(\.heldBy) == ["apple:700", "PHONE-701", "apple:702", nil, nil])
    }

    @Test("a notification carrying a purchase keeps it with the notification, once; one taken in before without it (a push file) keeps it now", arguments: ContractStore.all)
    func keptWithNotification(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let discovery = try discoveryStore(opened)
        var pulled = StoreNotification.playPush(PlayNotification(messageID: "m-9", kind: .oneTimeProduct(type: 1, purchaseToken: "token-9", productID: "gems_100")))
        // As a push file first: recorded, unconfirmed, nothing kept.
        #expect(try store.ingestNotifications([pulled], now: t0) == [.taken(.recorded)])
        #expect(try discovery.discoveredPurchases(limit: 5).isEmpty)
        // Pulled and confirmed: the same message id, now with its purchase.
        pulled.via = .poll
        pulled.discovered = Self.play(token: "token-9", orderID: "GPA.9")
        let deliver = DiscoverySettings(mode: .deliver)
        #expect(try store.ingestNotifications([pulled], consumption: .off, discovery: deliver, now: t0 + 1) == [.discovered(.recorded(.waiting(until: t0 + 901)))])
        // Delivered again (its acknowledgement lost): known, nothing new.
        #expect(try store.ingestNotifications([pulled], consumption: .off, discovery: deliver, now: t0 + 2) == [.discovered(.known(.waiting(until: t0 + 901)))])
        #expect(try discovery.discoveredPurchases(limit: 5).map(\.purchase.transactionKey) == [pulled.discovered!.transactionKey])
        #expect(try store.notifications(unmatchedOnly: false, limit: 10).count == 1)
    }
}
