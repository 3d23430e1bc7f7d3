import Foundation
import ReconcileCore
import Testing
import TestSupport
import ReconcileStore

/// What `reconcilectl` and the daemon's reports owe the operator on every store (DESIGN §4, §7,
/// §10), through ``OperableOrderStore`` alone: `list` and each of its filters, `status`'s
/// summary and counts, bulk operator actions in batches, and the reads `OrderStore` gives them
/// (history, due times, the oldest waiting order, pruning). Runs against each store in
/// ``ContractStore/all``; every expectation is an exact result, never one store against another.
@Suite("Store contract: listing, summary and bulk actions", .postgreSQLTurn)
struct OperableStoreContractTests {
    let owner = "node-a:1:x"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }
    let alice = TransitionActor.operator("alice")
    let apple = ConfiguredVerifiers(kind: .apple)
    let withPlay = ConfiguredVerifiers(kind: .apple, googlePlay: true)

    // MARK: - Driving orders through the protocol

    /// An App Store order with a receipt; `waiting`: with a transaction id only (no `[Verifier]`
    /// for it); `token`: a Google Play order.
    func candidate(_ orderID: String, product: String = "gems", waiting: Bool = false, token: String? = nil) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(
            orderID, product: product, receipt: waiting || token != nil ? nil : "QUJD", transactionID: waiting ? "9" + orderID.unicodeScalars.map { String($0.value) }.joined() : nil,
            extra: token.map { #""purchase_token":"\#($0)""# } ?? "")
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    func ingest(_ store: any OrderStore, _ orderID: String, product: String = "gems", at time: Date, waiting: Bool = false, token: String? = nil) throws {
        let outcome = try store.ingest([candidate(orderID, product: product, waiting: waiting, token: token)], verifiers: withPlay, now: time)
        #expect(outcome == [.accepted(waiting ? .waiting : .pending)], "\(orderID)")
    }

    /// Leases `orderID`, which must be the only order of `kind` due at `time`.
    func lease(_ store: any OrderStore, _ orderID: String, _ kind: WorkKind = .verify, at time: Date) throws -> ClaimedOrder {
        let claimed = try store.claimDue(kind, now: time, limit: 100, owner: owner, leaseUntil: time + 120, charge: true)
        #expect(claimed.map(\.orderID) == [orderID])
        return try #require(claimed.first)
    }

    func complete(_ store: any OrderStore, _ order: ClaimedOrder, _ resolution: AttemptCompletion.Resolution, at time: Date) throws -> CompletionResult {
        let record = AttemptRecord(
            endpoint: .production, environment: "Production", httpStatus: 200, verifierStatus: 21010, latency: .milliseconds(9), outcome: .answered,
            startedAt: time)
        return try store.complete([AttemptCompletion(order: order, records: [record], resolution: resolution, charged: true)], owner: owner, now: time)[0]
    }

    /// Ingests `orderID` at `time` and ends its first attempt there with `resolution`.
    func attempted(_ store: any OrderStore, _ orderID: String, at time: Date, _ resolution: AttemptCompletion.Resolution) throws {
        try ingest(store, orderID, at: time)
        _ = try complete(store, try lease(store, orderID, at: time), resolution, at: time)
    }

    func escalated(_ store: any OrderStore, _ orderID: String, at time: Date) throws {
        try attempted(store, orderID, at: time, .escalate(Reason(.noMatchingPurchase)))
        #expect(try store.order(id: orderID)?.state == .escalated)
    }

    func act(_ store: any OrderStore, _ action: OperatorAction, _ ids: [String], note: String? = "n", at time: Date) throws -> [OperatorOutcome.Result] {
        try store.apply(OperatorRequest(action: action, target: .orders(ids), actor: alice, note: note), verifierKind: .apple, now: time).map(\.result)
    }

    /// A bulk action's run: what `each` saw, how often `shouldStop` and `now` were asked.
    struct Run {
        var outcome: BulkOutcome
        var seen: [OperatorOutcome]
        var stopsAsked: Int
        var clockAsked: Int
    }

    /// Runs `request` in batches of `batchSize`; the clock reads `t0 + 100`, `+ 110`, … (once
    /// per batch); `stop(n)` answers the `n`th ask of `shouldStop` (from 1).
    func bulk(
        _ store: any OperableOrderStore, _ request: OperatorRequest, batchSize: Int = 2, sampleSize: Int = 100, stop: (Int) -> Bool = { _ in false }
    ) throws -> Run {
        var seen: [OperatorOutcome] = []
        var stops = 0
        var clock = 0
        let outcome = try store.applyInBatches(
            request, verifiers: apple,
            now: {
                clock += 1
                return t0 + 90 + Double(10 * clock)
            },
            batchSize: batchSize, sampleSize: sampleSize,
            shouldStop: {
                stops += 1
                return stop(stops)
            },
            each: { seen.append($0) })
        return Run(outcome: outcome, seen: seen, stopsAsked: stops, clockAsked: clock)
    }

    // MARK: - list (reconcilectl list)

    /// E1 escalated (taken in at t0), W1 waiting (+5), A3 pending due at +100 (taken in at +6),
    /// A1 due at +10, A2 (coins) due at +20, G1 (Google Play) due at +30, H1 held (+40).
    func listed(_ store: any OrderStore) throws {
        try escalated(store, "E1", at: t0)
        try ingest(store, "W1", at: t0 + 5, waiting: true)
        try attempted(store, "A3", at: t0 + 6, .retry(at: t0 + 100, reason: Reason(.http(503))))
        try ingest(store, "A1", at: t0 + 10)
        try ingest(store, "A2", product: "coins", at: t0 + 20)
        try ingest(store, "G1", at: t0 + 30, token: "tok-G1")
        try ingest(store, "H1", at: t0 + 40)
        #expect(try act(store, .hold, ["H1"], at: t0 + 41) == [.applied(from: .pending, to: .held)])
    }

    func ids(_ store: any OperableOrderStore, _ filter: OrderFilter) throws -> (ids: [String], total: Int) {
        let found = try store.list(filter)
        return (found.orders.map(\.orderID), found.total)
    }

    @Test("list: soonest next attempt first, orders without one last and oldest first; the limit cuts the page, not the total", arguments: ContractStore.all)
    func listOrder(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        #expect(try store.list(OrderFilter()).orders.isEmpty && store.list(OrderFilter()).total == 0)
        try listed(store)
        let all = try store.list(OrderFilter())
        #expect(all.orders.map(\.orderID) == ["A1", "A2", "G1", "A3", "E1", "W1", "H1"] && all.total == 7)
        #expect(all.orders.map(\.nextAttemptAt) == [t0 + 10, t0 + 20, t0 + 30, t0 + 100, nil, nil, nil])
        #expect(all.orders.first { $0.orderID == "A2" }?.productID == "coins")
        #expect(try ids(store, OrderFilter(limit: 2)) == (["A1", "A2"], 7))
        #expect(try ids(store, OrderFilter(limit: 0)) == ([], 7))
    }

    @Test("orderIDs: only the ids, in the order taken in, by the same filters (a reason, an id prefix), up to the limit", arguments: ContractStore.all)
    func orderIDs(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try listed(store)
        #expect(try store.orderIDs(OrderFilter()) == ["E1", "W1", "A3", "A1", "A2", "G1", "H1"])
        #expect(try store.orderIDs(OrderFilter(states: [.pending])) == ["A3", "A1", "A2", "G1"])
        #expect(try store.orderIDs(OrderFilter(reason: "http_503")) == ["A3"])
        #expect(try store.orderIDs(OrderFilter(orderIDPrefix: "A")) == ["A3", "A1", "A2"])
        #expect(try store.orderIDs(OrderFilter(orderIDPrefix: "A_")) == [], "an id prefix is text, not a LIKE pattern")
        #expect(try store.orderIDs(OrderFilter(store: .googlePlay)) == ["G1"])
        #expect(try store.orderIDs(OrderFilter(states: [.pending], limit: 2)) == ["A3", "A1"])
    }

    @Test("list: one state or several, a product, taken in before a time, each filter with the others, the total counting what matches", arguments: ContractStore.all)
    func listFilters(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try listed(store)
        #expect(try ids(store, OrderFilter(states: [.pending])) == (["A1", "A2", "G1", "A3"], 4))
        #expect(try ids(store, OrderFilter(states: [.held, .waiting, .escalated])) == (["E1", "W1", "H1"], 3))
        #expect(try ids(store, OrderFilter(states: [.finished])) == ([], 0))
        #expect(try ids(store, OrderFilter(productID: "coins")) == (["A2"], 1))
        #expect(try ids(store, OrderFilter(productID: "nothing")) == ([], 0))
        // Strictly before: A1, taken in at +10, is not.
        #expect(try ids(store, OrderFilter(receivedBefore: t0 + 10)) == (["A3", "E1", "W1"], 3))
        #expect(try ids(store, OrderFilter(states: [.pending], productID: "gems", receivedBefore: t0 + 35)) == (["A1", "G1", "A3"], 3))
        #expect(try ids(store, OrderFilter(states: [.pending], limit: 1)) == (["A1"], 4))
    }

    @Test("list --store: Google Play orders (a purchase token) or App Store orders only, with the other filters", arguments: ContractStore.all)
    func listByStore(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try listed(store)
        #expect(try ids(store, OrderFilter(store: .googlePlay)) == (["G1"], 1))
        #expect(try ids(store, OrderFilter(store: .appStore)) == (["A1", "A2", "A3", "E1", "W1", "H1"], 6))
        #expect(try ids(store, OrderFilter(states: [.pending], store: .appStore, limit: 2)) == (["A1", "A2"], 3))
        #expect(try ids(store, OrderFilter(states: [.escalated], store: .googlePlay)) == ([], 0))
        #expect(try store.list(OrderFilter(store: .googlePlay)).orders.first?.proof.purchaseToken == "tok-G1")
    }

    @Test("shape: the orders still in play by state, product or endpoint and by age; finished ones left out", arguments: ContractStore.all)
    func shape(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try listed(store)
        try finishedPlayOrder(store, "F1", at: t0)
        // At t0 + 301 s only E1, received at t0, is past 5 minutes.
        let now = t0 + 301
        let byState = try store.shape(by: .state, now: now, verifierEndpoint: "production")
        #expect(byState.rows.map(\.name) == ["pending", "escalated", "held", "waiting"])
        #expect(byState.rows.map(\.counts) == [
            [4, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        ])
        #expect(byState.totalRow.total == 7)
        let byProduct = try store.shape(by: .product, now: now, verifierEndpoint: "production")
        #expect(byProduct.rows.map { "\($0.name) \($0.total)" } == ["gems 6", "coins 1"])
        let byEndpoint = try store.shape(by: .endpoint, now: now, verifierEndpoint: "production")
        #expect(byEndpoint.rows.map { "\($0.name) \($0.total)" } == ["production 6", "googleplay 1"])
        // A day later everything is in the 1280+ column.
        #expect(try store.shape(by: .state, now: t0 + 86_400, verifierEndpoint: "production").totalRow.counts == [0, 0, 0, 0, 0, 0, 0, 0, 0, 7])
    }

    // MARK: - summary and counts (reconcilectl status, STATUS=, the metrics file)

    /// Finishes Play order `orderID` as Google verified it, unacknowledged: the outbox owes an
    /// acknowledgement, due at `time`.
    func finishedPlayOrder(_ store: any OrderStore, _ orderID: String, at time: Date) throws {
        try ingest(store, orderID, at: time, token: "tok-\(orderID)")
        let claimed = try lease(store, orderID, .verifyPlay, at: time)
        let grant = Grant(
            transactionID: "GPA.\(orderID)", productID: "gems", quantity: 1, purchaseDateMilliseconds: 1, environment: "Production",
            acknowledgementState: 0, consumptionState: 0)
        let record = AttemptRecord(endpoint: .googlePlay, httpStatus: 200, latency: .milliseconds(9), outcome: .answered, startedAt: time)
        let result = try store.complete(
            [AttemptCompletion(
                order: claimed, records: [record], resolution: .verified(grant, finishes: true, finishedBy: .verifier), charged: true,
                playFollowUp: PlayFollowUp(acknowledge: true, consume: false, packageName: "com.example.app"))],
            owner: owner, now: time)
        #expect(result.first?.to == .finished)
    }

    @Test("summary: counts, the oldest pending or verifying order, the next attempt of any kind, unmatched notifications and the outbox, in one read", arguments: ContractStore.all)
    func summary(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        #expect(try store.summary() == StoreSummary(counts: [:]))
        try escalated(store, "old", at: t0)
        try finishedPlayOrder(store, "P1", at: t0 + 10)
        try ingest(store, "mid", at: t0 + 60)
        let mid = try lease(store, "mid", at: t0 + 60)
        try ingest(store, "W", at: t0 + 70, waiting: true)
        try attempted(store, "new", at: t0 + 120, .retry(at: t0 + 500, reason: Reason(.http(503))))
        let refund = StoreNotification(
            source: .appStore, notificationID: "n-1", type: "REFUND", transactionID: "404", productID: "gems", environment: "Production",
            signedAt: t0, revokedAt: t0, revocationReason: 0, via: .file)
        #expect(try store.ingestNotifications([refund], now: t0 + 130) == [.taken(.unmatched)])

        var summary = try store.summary()
        #expect(summary.counts == [.escalated: 1, .finished: 1, .verifying: 1, .waiting: 1, .pending: 1])
        #expect(summary.oldestPendingReceivedAt == t0 + 60, "escalated and waiting orders do not count")
        #expect(summary.nextAttemptAt == t0 + 500)
        #expect(summary.unmatchedNotifications == 1)
        #expect(summary.outbox == OutboxSummary(pending: 1, escalated: 0, oldestPendingCreatedAt: t0 + 10, nextAttemptAt: t0 + 10))

        // The verifying order ends: the oldest is the pending one; a delivery due sooner counts.
        _ = try complete(store, mid, .verified(Grant(transactionID: "T-mid"), finishes: false, finishedBy: .verifier), at: t0 + 200)
        summary = try store.summary()
        #expect(summary.counts == [.escalated: 1, .finished: 1, .verified: 1, .waiting: 1, .pending: 1])
        #expect(summary.oldestPendingReceivedAt == t0 + 120)
        #expect(summary.nextAttemptAt == t0 + 200)
    }

    @Test("counts by state: every state with orders, or only those asked for; states without orders are left out", arguments: ContractStore.all)
    func counts(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        #expect(try store.countsByState() == [:] && store.countsByState(in: [.pending]) == [:])
        try listed(store)
        #expect(try store.countsByState() == [.escalated: 1, .waiting: 1, .pending: 4, .held: 1])
        #expect(try store.countsByState(in: [.pending, .held, .finished]) == [.pending: 4, .held: 1])
        #expect(try store.countsByState(in: [.escalated]) == [.escalated: 1])
        #expect(try store.countsByState(in: []) == [:])
    }

    // MARK: - Bulk operator actions in batches

    /// The five orders of a bulk action, in the order they are taken in (not their names').
    static let bulkOrders = ["O3", "O1", "O4", "O0", "O2"]

    /// What each verb acts on by `--state`, what it makes of it, and its note.
    static func bulkCase(_ action: OperatorAction) -> (from: OrderState, to: OrderState) {
        switch action {
        case .hold: (.escalated, .held)
        case .release: (.held, .pending)
        case .cancel: (.pending, .cancelled)
        case .resolve: (.escalated, .finished)
        case .retry: (.escalated, .pending)
        }
    }

    /// ``bulkOrders`` in `state`, taken in at t0, t0 + 1, …, and R1 rejected before them all.
    func bulkOrders(_ store: any OrderStore, in state: OrderState) throws {
        try attempted(store, "R1", at: t0 - 10, .reject(Reason(.apple(21010))))
        for (index, id) in Self.bulkOrders.enumerated() {
            let time = t0 + Double(index)
            switch state {
            case .escalated: try escalated(store, id, at: time)
            case .pending: try ingest(store, id, at: time)
            case .held:
                try ingest(store, id, at: time)
                #expect(try act(store, .hold, [id], at: time) == [.applied(from: .pending, to: .held)])
            default: Issue.record("no bulk case from \(state)")
            }
        }
    }

    @Test(
        "applyInBatches --state, each verb: every order in the state, in the order taken in, batch by batch with the clock read per batch; counted, each outcome seen, the first as examples",
        arguments: ContractStore.all, OperatorAction.allCases)
    func bulkVerb(_ kind: ContractStore, _ action: OperatorAction) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        let (from, to) = Self.bulkCase(action)
        try bulkOrders(store, in: from)
        let run = try bulk(store, OperatorRequest(action: action, target: .state(from), actor: alice, note: "bulk"), batchSize: 2, sampleSize: 2)
        let applied = Self.bulkOrders.map { OperatorOutcome(orderID: $0, result: .applied(from: from, to: to)) }
        #expect(run.seen == applied)
        #expect(run.outcome.examples == Array(applied.prefix(2)))
        #expect(run.outcome.matched == 5 && run.outcome.applied == 5 && run.outcome.changed == 5)
        #expect(run.outcome.deferred == 0 && run.outcome.refused == 0 && run.outcome.notFound == 0 && run.outcome.skipped == 0)
        #expect(!run.outcome.interrupted && run.outcome.notReached == 0)
        #expect(run.stopsAsked == 3 && run.clockAsked == 3, "asked before each of the three batches")
        #expect(try store.countsByState() == [to: 5, .rejected: 1])
        for (index, id) in Self.bulkOrders.enumerated() {
            let batchTime = t0 + 100 + Double(10 * (index / 2))
            let last = try #require(try store.history(orderID: id).last)
            #expect(last.actor == alice && last.detail == "bulk" && last.from == from && last.to == to && last.at == batchTime, "\(id): \(last)")
            let order = try #require(try store.order(id: id))
            switch action {
            case .retry, .release: #expect(order.nextAttemptAt == batchTime, "\(id) due when its batch ran")
            case .resolve: #expect(order.finishedBy == .operator && order.nextAttemptAt == nil)
            case .hold, .cancel: #expect(order.nextAttemptAt == nil)
            }
        }
    }

    @Test("applyInBatches: a stop asked for between batches ends the action there, counting the orders not reached", arguments: ContractStore.all)
    func bulkStop(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try bulkOrders(store, in: .escalated)
        let run = try bulk(store, OperatorRequest(action: .retry, target: .state(.escalated), actor: alice), batchSize: 2, stop: { $0 == 3 })
        #expect(run.outcome.interrupted && run.outcome.notReached == 1)
        #expect(run.outcome.matched == 5 && run.outcome.applied == 4)
        #expect(run.seen.map(\.orderID) == Array(Self.bulkOrders.prefix(4)) && run.clockAsked == 2)
        #expect(try store.countsByState() == [.pending: 4, .escalated: 1, .rejected: 1])
        #expect(try store.order(id: "O2")?.state == .escalated, "the last taken in was not reached")
        // Named orders stop the same way.
        let named = try bulk(store, OperatorRequest(action: .hold, target: .orders(["O3", "O1", "O2"]), actor: alice), batchSize: 1, stop: { $0 == 2 })
        #expect(named.outcome.interrupted && named.outcome.notReached == 2 && named.outcome.applied == 1)
        #expect(named.seen == [OperatorOutcome(orderID: "O3", result: .applied(from: .pending, to: .held))])
    }

    @Test("applyInBatches --state: an order that left the state before its batch is skipped; one that entered it after the start is left alone", arguments: ContractStore.all)
    func bulkSkipped(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try bulkOrders(store, in: .escalated)
        let run = try bulk(
            store, OperatorRequest(action: .hold, target: .state(.escalated), actor: alice), batchSize: 2,
            stop: { asked in
                if asked == 2 {
                    // Between the first and the second batch, another operator cancels O4 and an
                    // order is escalated.
                    #expect((try? act(store, .cancel, ["O4"], note: "fraud", at: t0 + 105)) == [.applied(from: .escalated, to: .cancelled)])
                    #expect((try? escalated(store, "N1", at: t0 + 106)) != nil)
                }
                return false
            })
        #expect(run.outcome.matched == 5 && run.outcome.applied == 4 && run.outcome.skipped == 1)
        #expect(run.seen.map(\.orderID) == ["O3", "O1", "O0", "O2"])
        #expect(try store.order(id: "O4")?.state == .cancelled && store.order(id: "N1")?.state == .escalated)
        #expect(try store.countsByState() == [.held: 4, .cancelled: 1, .escalated: 1, .rejected: 1])
    }

    @Test("applyInBatches, named orders: every outcome in the order named; an order in flight defers, a second action on it is refused; examples sampled per kind", arguments: ContractStore.all)
    func bulkNamed(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        for (index, id) in ["E1", "E2", "E3", "E4"].enumerated() { try escalated(store, id, at: t0 + Double(index)) }
        try attempted(store, "F1", at: t0 + 4, .verified(Grant(transactionID: "T-F1"), finishes: true, finishedBy: .merchant))
        try ingest(store, "V1", at: t0 + 5)
        let v1 = try lease(store, "V1", at: t0 + 5)

        let run = try bulk(
            store, OperatorRequest(action: .hold, target: .orders(["V1", "NOPE", "E1", "E2", "E3", "F1", "E4"]), actor: alice), batchSize: 3,
            sampleSize: 2)
        #expect(run.seen.map(\.orderID) == ["V1", "NOPE", "E1", "E2", "E3", "F1", "E4"])
        #expect(run.seen[0].result == .deferred(state: .verifying) && run.seen[1].result == .notFound)
        guard case .refused(let why) = run.seen[5].result else {
            Issue.record("hold of a finished order: \(run.seen[5].result)")
            return
        }
        #expect(why.contains("finished"), "\(why)")
        #expect(run.outcome.matched == 7 && run.outcome.applied == 4 && run.outcome.deferred == 1 && run.outcome.changed == 5)
        #expect(run.outcome.refused == 1 && run.outcome.notFound == 1 && run.outcome.skipped == 0 && !run.outcome.interrupted)
        // Two changed and two unchanged, in the order met.
        #expect(run.outcome.examples.map(\.orderID) == ["V1", "NOPE", "E1", "F1"])
        #expect(run.stopsAsked == 3 && run.clockAsked == 3)
        #expect(try store.order(id: "V1")?.state == .verifying)
        // The deferred hold is applied when the attempt ends.
        let ended = try complete(store, v1, .retry(at: t0 + 500, reason: Reason(.http(503))), at: t0 + 200)
        #expect(ended.to == .held && ended.appliedAction == .hold && ended.appliedBy == alice)

        // --state verifying: one order already has an action waiting (refused), the other defers.
        try ingest(store, "V2", at: t0 + 300)
        try ingest(store, "V3", at: t0 + 301)
        #expect(try store.claimDue(.verify, now: t0 + 302, limit: 10, owner: owner, leaseUntil: t0 + 400, charge: true).map(\.orderID) == ["V2", "V3"])
        #expect(try act(store, .cancel, ["V2"], note: "fraud", at: t0 + 303) == [.deferred(state: .verifying)])
        let inFlight = try bulk(store, OperatorRequest(action: .hold, target: .state(.verifying), actor: alice), batchSize: 1)
        #expect(inFlight.outcome.matched == 2 && inFlight.outcome.deferred == 1 && inFlight.outcome.refused == 1)
        #expect(inFlight.seen.map(\.orderID) == ["V2", "V3"] && inFlight.seen[1].result == .deferred(state: .verifying))
        guard case .refused(let waiting) = inFlight.seen[0].result else {
            Issue.record("a second action on V2: \(inFlight.seen[0].result)")
            return
        }
        #expect(waiting.contains("an earlier cancel by operator:alice"), "\(waiting)")
    }

    @Test("applyInBatches --state retry: a duplicate_transaction escalation is refused naming the order holding it, unless forced; --reset-attempts restarts the age clock", arguments: ContractStore.all)
    func bulkRetryDuplicate(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try ingest(store, "A1", at: t0)
        try ingest(store, "A2", at: t0 + 1)
        let claimed = try store.claimDue(.verify, now: t0 + 2, limit: 10, owner: owner, leaseUntil: t0 + 120, charge: true)
        #expect(claimed.map(\.orderID) == ["A1", "A2"])
        let items = [AppleReceiptItem(productID: "gems", transactionID: "500", originalTransactionID: "500", purchaseDateMilliseconds: 1)]
        _ = try store.complete(
            claimed.map { AttemptCompletion(order: $0, records: [], resolution: .match(items: items, environment: "Production", finishes: true), charged: true) },
            owner: owner, now: t0 + 3)
        #expect(try store.order(id: "A1")?.state == .finished && store.order(id: "A2")?.reason == "duplicate_transaction")
        try escalated(store, "E1", at: t0 + 4)

        let refused = try bulk(store, OperatorRequest(action: .retry, target: .state(.escalated), actor: alice), batchSize: 1)
        #expect(refused.outcome.matched == 2 && refused.outcome.applied == 1 && refused.outcome.refused == 1)
        #expect(refused.seen.map(\.orderID) == ["A2", "E1"])
        guard case .refused(let why) = refused.seen[0].result else {
            Issue.record("retry of a duplicate without --force: \(refused.seen[0].result)")
            return
        }
        #expect(why.contains("transaction 500 is claimed by order A1") && why.contains("--force"), "\(why)")
        let forced = try bulk(store, OperatorRequest(action: .retry, target: .state(.escalated), actor: alice, resetAttempts: true, force: true))
        #expect(forced.seen == [OperatorOutcome(orderID: "A2", result: .applied(from: .escalated, to: .pending))])
        let retried = try #require(try store.order(id: "A2"))
        #expect(retried.attempts == 0 && retried.receivedAt == t0 + 100 && retried.nextAttemptAt == t0 + 100)
    }

    @Test("applyInBatches --state resolve with a transaction claims it, and a refund that came first applies with it", arguments: ContractStore.all)
    func bulkResolveClaims(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        let refund = StoreNotification(
            source: .appStore, notificationID: "n-1", type: "REFUND", transactionID: "970", productID: "gems", environment: "Production",
            signedAt: t0, revokedAt: t0, revocationReason: 0, via: .file)
        #expect(try store.ingestNotifications([refund], now: t0) == [.taken(.unmatched)])
        try escalated(store, "E1", at: t0 + 1)
        let run = try bulk(
            store, OperatorRequest(action: .resolve, target: .state(.escalated), actor: alice, note: "paid by hand", transactionID: "970"))
        #expect(run.seen == [OperatorOutcome(orderID: "E1", result: .applied(from: .escalated, to: .finished))])
        #expect(try store.order(id: "E1")?.verifiedTransactionID == "970")
        #expect(try store.order(id: "E1")?.state == .revoked)
        #expect(try store.summary().unmatchedNotifications == 0)
    }

    // MARK: - Reads the operator's tools rely on

    @Test("history: every transition of the order, oldest first, with its actor, note and the request that decided it; none for an unknown order", arguments: ContractStore.all)
    func history(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        try attempted(store, "A1", at: t0, .reject(Reason(.apple(21010))))
        #expect(try act(store, .retry, ["A1"], note: "new receipt sent", at: t0 + 10) == [.applied(from: .rejected, to: .pending)])
        let history = try store.history(orderID: "A1")
        #expect(history.map(\.from) == [nil, .pending, .verifying, .rejected])
        #expect(history.map(\.to) == [.pending, .verifying, .rejected, .pending])
        #expect(history.map(\.reason) == ["ingested", "attempt", "apple_21010", "retry"])
        #expect(history.map(\.at) == [t0, t0, t0, t0 + 10])
        #expect(history.map(\.actor) == [.daemon, .daemon, .daemon, alice])
        #expect(history[0].detail == "from spool file A1.json" && history[3].detail == "new receipt sent")
        let rejected = history[2]
        #expect(rejected.verifierStatus == 21010 && rejected.httpStatus == 200 && rejected.environment == "Production")
        #expect(rejected.endpoint == "production" && rejected.latencyMilliseconds == 9)
        #expect(history[3].verifierStatus == nil && history[3].httpStatus == nil)
        #expect(try store.history(orderID: "NOPE").isEmpty)
    }

    @Test("next due time per kind: the earliest due order of that kind; leased, held and waiting orders are not due", arguments: ContractStore.all)
    func nextDue(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        for work in WorkKind.allCases { #expect(try store.nextDueTime(work) == nil) }
        try ingest(store, "L1", at: t0)
        _ = try lease(store, "L1", at: t0)
        try ingest(store, "H1", at: t0 + 1)
        _ = try act(store, .hold, ["H1"], at: t0 + 1)
        try ingest(store, "W1", at: t0 + 2, waiting: true)
        try attempted(store, "D1", at: t0 + 3, .verified(Grant(transactionID: "T-D1"), finishes: false, finishedBy: .verifier))
        try ingest(store, "G2", at: t0 + 40, token: "tok-G2")
        try ingest(store, "G1", at: t0 + 30, token: "tok-G1")
        try ingest(store, "A2", at: t0 + 20)
        #expect(try store.nextDueTime(.verify) == t0 + 20)
        #expect(try store.nextDueTime(.verifyPlay) == t0 + 30)
        #expect(try store.nextDueTime(.deliver) == t0 + 3)
    }

    @Test("the oldest waiting order: when it was taken in; pending and expired orders do not count", arguments: ContractStore.all)
    func oldestWaiting(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        #expect(try store.oldestWaitingReceivedAt() == nil)
        try ingest(store, "A0", at: t0 - 50)
        try ingest(store, "W1", at: t0, waiting: true)
        try ingest(store, "W22", at: t0 + 30, waiting: true)
        try ingest(store, "W3", at: t0 - 10, waiting: true)
        #expect(try store.oldestWaitingReceivedAt() == t0 - 10)
        #expect(try store.expireWaiting(receivedBefore: t0 - 5, now: t0 + 60, limit: 10).map(\.orderID) == ["W3"])
        #expect(try store.oldestWaitingReceivedAt() == t0)
    }

    @Test("pruning: finished and cancelled orders last changed before the cutoff, through several batches; later ones keep their receipts", arguments: ContractStore.all)
    func pruneCutoff(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.operable
        let many = (0..<1_203).map { "F\($0)" }
        _ = try store.ingest(many.map { candidate($0) }, verifiers: apple, now: t0)
        let claimed = try store.claimDue(.verify, now: t0, limit: 2_000, owner: owner, leaseUntil: t0 + 120, charge: true)
        #expect(claimed.count == many.count)
        _ = try store.complete(
            claimed.map {
                AttemptCompletion(order: $0, records: [], resolution: .verified(Grant(), finishes: true, finishedBy: .merchant), charged: true)
            }, owner: owner, now: t0 + 1)
        try ingest(store, "C1", at: t0 + 2)
        #expect(try act(store, .cancel, ["C1"], at: t0 + 2) == [.applied(from: .pending, to: .cancelled)])
        try escalated(store, "E1", at: t0 + 3)
        try attempted(store, "late", at: t0 + 500, .verified(Grant(transactionID: "T-late"), finishes: true, finishedBy: .merchant))
        #expect(try store.pruneFinished(before: t0 + 100, now: t0 + 1_000) == 1_204)
        #expect(try store.order(id: "F1202")?.proof.receipt == nil && store.order(id: "F1202")?.prunedAt == t0 + 1_000)
        #expect(try store.order(id: "C1")?.proof.receipt == nil)
        #expect(try store.order(id: "late")?.proof.receipt == "QUJD" && store.order(id: "late")?.prunedAt == nil)
        #expect(try store.order(id: "E1")?.proof.receipt == "QUJD")
        #expect(try store.pruneFinished(before: t0 + 100, now: t0 + 2_000) == 0)
        #expect(try store.order(id: "F0")?.prunedAt == t0 + 1_000, "a pruned order is not pruned again")
    }

    @Test("location: where the store is, as messages name it (the path, or the URI without a password)", arguments: ContractStore.all)
    func location(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        #expect(opened.operable.location == opened.location)
        #expect(!opened.operable.location.lowercased().contains("password"))
    }
}
