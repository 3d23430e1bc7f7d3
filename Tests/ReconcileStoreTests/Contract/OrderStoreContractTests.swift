import Foundation
import ReconcileCore
import Testing
import TestSupport

/// The behaviour every ``OrderStore`` owes the daemon and `reconcilectl` (DESIGN §3–§7), written
/// against the protocol alone and run against each store in ``ContractStore/all``: ingest
/// idempotency, leases, completions, claims, operator verbs, expiry, pruning and counts.
@Suite("Store contract", .postgreSQLTurn)
struct OrderStoreContractTests {
    let owner = "node-a:1:x"
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    var t0: Date { Self.t0 }
    let alice = TransitionActor.operator("alice")

    // MARK: - Driving orders through the protocol

    func candidate(_ orderID: String, product: String = "gems", receipt: String? = "QUJD", transactionID: String? = nil) -> IngestCandidate {
        let text = OrderFixtures.orderJSON(orderID, product: product, receipt: receipt, transactionID: transactionID)
        let bytes = Array(text.utf8)
        return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:" + text, fileName: "\(orderID).json")
    }

    func claim(_ store: any OrderStore, _ kind: WorkKind = .verify, at time: Date? = nil, limit: Int = 100, charge: Bool = true, owner: String? = nil) throws
        -> [ClaimedOrder]
    {
        let time = time ?? t0
        return try store.claimDue(kind, now: time, limit: limit, owner: owner ?? self.owner, leaseUntil: time + 120, charge: charge)
    }

    func request(_ status: Int? = 0, outcome: AttemptOutcome = .answered) -> AttemptRecord {
        AttemptRecord(endpoint: .production, environment: "Production", httpStatus: 200, verifierStatus: status, latency: .milliseconds(9), outcome: outcome, startedAt: t0)
    }

    func complete(_ store: any OrderStore, _ order: ClaimedOrder, _ resolution: AttemptCompletion.Resolution, charged: Bool = true, at time: Date? = nil)
        throws -> CompletionResult
    {
        try store.complete([AttemptCompletion(order: order, records: [request()], resolution: resolution, charged: charged)], owner: owner, now: time ?? t0 + 1)[0]
    }

    func act(_ store: any OrderStore, _ action: OperatorAction, _ ids: [String], note: String? = nil, reset: Bool = false, force: Bool = false,
             transaction: String? = nil, at time: Date? = nil) throws -> [OperatorOutcome.Result]
    {
        try store.apply(
            OperatorRequest(action: action, target: .orders(ids), actor: alice, note: note, resetAttempts: reset, force: force, transactionID: transaction),
            verifierKind: .apple, now: time ?? t0 + 10
        ).map(\.result)
    }

    /// Puts a fresh order `id` into `state` through the protocol alone.
    func make(_ store: any OrderStore, _ id: String, _ state: OrderState) throws {
        _ = try store.ingest([candidate(id, receipt: state == .waiting || state == .expired ? nil : "QUJD", transactionID: state == .waiting || state == .expired ? "9" : nil)],
                             verifierKind: .apple, now: t0)
        func claimed() throws -> ClaimedOrder { try #require(try claim(store).first { $0.orderID == id }) }
        switch state {
        case .waiting, .pending: break
        case .verifying: _ = try claimed()
        case .verified: _ = try complete(store, try claimed(), .verified(Grant(transactionID: "T-\(id)"), finishes: false, finishedBy: .verifier))
        case .finished: _ = try complete(store, try claimed(), .verified(Grant(transactionID: "T-\(id)"), finishes: true, finishedBy: .merchant))
        case .rejected: _ = try complete(store, try claimed(), .reject(Reason(.apple(21010))))
        case .escalated: _ = try complete(store, try claimed(), .escalate(Reason(.noMatchingPurchase)))
        case .held: _ = try act(store, .hold, [id])
        case .cancelled: _ = try act(store, .cancel, [id], note: "n")
        case .expired: _ = try store.expireWaiting(receivedBefore: t0 + 1, now: t0 + 2, limit: 10)
        case .revoked: Issue.record("no store call revokes an order yet")
        }
        #expect(try store.order(id: id)?.state == state, "could not make \(id) \(state)")
    }

    // MARK: - Ingest (DESIGN §3)

    @Test("ingest: new orders pending or waiting; the same content again changes nothing; another product conflicts", arguments: ContractStore.all)
    func ingest(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let outcomes = try store.ingest([candidate("A1"), candidate("W1", receipt: nil, transactionID: "5"), candidate("A1")], verifierKind: .apple, now: t0)
        #expect(outcomes == [.accepted(.pending), .accepted(.waiting), .unchanged])
        #expect(try store.order(id: "A1")?.nextAttemptAt == t0 && store.order(id: "W1")?.nextAttemptAt == nil)
        guard case .conflict(let problem) = try store.ingest([candidate("A1", product: "coins")], verifierKind: .apple, now: t0 + 1)[0] else {
            Issue.record("no conflict")
            return
        }
        #expect(problem.code == .conflictingProduct)
        #expect(try store.order(id: "A1")?.productID == "gems")
        #expect(try store.history(orderID: "A1").map(\.reason) == ["ingested"])
        #expect(try store.countsByState() == [.pending: 1, .waiting: 1])
    }

    @Test("ingest: a Play order naming a package not in PackageName= is refused foreign_package naming both, new or stored already; a configured package or none is taken (issue 23 item 2)", arguments: ContractStore.all)
    func ingestForeignPackage(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        func play(_ orderID: String, token: String, package: String?) -> IngestCandidate {
            let extra = #""purchase_token":"\#(token)""# + (package.map { #","package_name":"\#($0)""# } ?? "")
            let bytes = Array(OrderFixtures.orderJSON(orderID, product: "gems", receipt: nil, extra: extra).utf8)
            return IngestCandidate(submission: try! OrderFileParser().parse(bytes), raw: bytes, contentHash: "test:\(orderID):\(token)", fileName: "\(orderID).json")
        }
        let verifiers = ConfiguredVerifiers(kind: nil, googlePlay: true, playPackages: ["com.example.app", "com.example.lite"])
        let outcomes = try store.ingest(
            [play("P1", token: "t1", package: "com.example.cheap"), play("P2", token: "t2", package: "com.example.lite"), play("P3", token: "t3", package: nil)],
            verifiers: verifiers, now: t0)
        guard case .conflict(let problem) = outcomes[0] else {
            Issue.record("no conflict: \(outcomes)")
            return
        }
        #expect(problem.code == .foreignPackage)
        #expect(problem.detail.contains("\"com.example.cheap\"") && problem.detail.contains("com.example.app com.example.lite"), "\(problem.detail)")
        #expect(Array(outcomes.dropFirst()) == [.accepted(.pending), .accepted(.pending)])
        #expect(try store.order(id: "P1") == nil)
        // A later file for a stored order cannot move it to another app either.
        guard case .conflict(let later) = try store.ingest([play("P3", token: "t4", package: "com.example.cheap")], verifiers: verifiers, now: t0 + 1)[0] else {
            Issue.record("no conflict for a stored order")
            return
        }
        #expect(later.code == .foreignPackage)
        #expect(try store.order(id: "P3")?.proof.purchaseToken == "t3" && store.order(id: "P3")?.proof.packageName == nil)
    }

    @Test("ingest: new proof revives a dormant order; a finished order only records the duplicate; proof is never taken away", arguments: ContractStore.all)
    func ingestProof(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try make(store, "R1", .rejected)
        try make(store, "F1", .finished)
        #expect(try store.ingest([candidate("R1", receipt: "TkVX")], verifierKind: .apple, now: t0 + 5) == [.proofReplaced(from: .rejected, to: .pending)])
        #expect(try store.order(id: "R1")?.nextAttemptAt == t0 + 5 && store.order(id: "R1")?.proof.receipt == "TkVX")
        let outcome = try store.ingest([candidate("F1", receipt: "TkVX")], verifierKind: .apple, now: t0 + 5)
        #expect(outcome == [.duplicateIgnored(state: .finished, why: "the order is finished; a later file changes nothing")])
        #expect(try store.history(orderID: "F1").last?.reason == "duplicate_ignored")
        _ = try store.ingest([candidate("R1", receipt: nil, transactionID: "77")], verifierKind: .apple, now: t0 + 6)
        #expect(try store.order(id: "R1")?.proof == OrderProof(receipt: "TkVX", transactionID: "77"))
    }

    // MARK: - Leases and completions

    @Test("claims lease due orders earliest first, count the attempt, and never lease an order twice", arguments: ContractStore.all)
    func claims(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0 + 2)
        _ = try store.ingest([candidate("A2")], verifierKind: .apple, now: t0 + 1)
        _ = try store.ingest([candidate("A3")], verifierKind: .apple, now: t0 + 50)
        #expect(try store.nextDueTime(.verify) == t0 + 1)
        let first = try claim(store, at: t0 + 10, limit: 1)
        #expect(first.map(\.orderID) == ["A2"] && first[0].attempt == 1 && first[0].charged)
        let rest = try claim(store, at: t0 + 10, owner: "node-b:2:y")
        #expect(rest.map(\.orderID) == ["A1"])
        #expect(try claim(store, at: t0 + 10).isEmpty)
        let leased = try #require(try store.order(id: "A2"))
        #expect(leased.state == .verifying && leased.leaseOwner == owner && leased.nextAttemptAt == nil && leased.attempts == 1)
        #expect(try store.history(orderID: "A2").last?.reason == "attempt")
        #expect(try store.nextDueTime(.verify) == t0 + 50)
        // A probe is not counted.
        let probe = try claim(store, at: t0 + 60, charge: false)
        #expect(probe.map(\.orderID) == ["A3"] && probe[0].attempt == 0 && !probe[0].charged)
        #expect(try store.order(id: "A3")?.attempts == 0)
    }

    @Test("completions: retry, reject, escalate, grant; the request is in the history; a completion without the lease changes nothing", arguments: ContractStore.all)
    func completions(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest(["A1", "A2", "A3", "A4"].map { candidate($0) }, verifierKind: .apple, now: t0)
        let orders = Dictionary(uniqueKeysWithValues: try claim(store).map { ($0.orderID, $0) })
        let retry = try complete(store, orders["A1"]!, .retry(at: t0 + 30, reason: Reason(.http(503), detail: "unavailable")))
        #expect(retry.to == .pending && retry.nextAttemptAt == t0 + 30 && retry.reason == Reason(.http(503), detail: "unavailable"))
        #expect(try store.order(id: "A1")?.nextAttemptAt == t0 + 30 && store.order(id: "A1")?.leaseOwner == nil)
        let last = try #require(try store.history(orderID: "A1").last)
        #expect(last.from == .verifying && last.to == .pending && last.reason == "http_503" && last.endpoint == "production" && last.verifierStatus == 0)
        #expect(try complete(store, orders["A2"]!, .reject(Reason(.apple(21010)))).to == .rejected)
        #expect(try complete(store, orders["A3"]!, .escalate(Reason(.maxAttempts, detail: "20 attempts"), limits: true)).to == .escalated)
        let granted = try complete(store, orders["A4"]!, .verified(Grant(transactionID: "T4"), finishes: true, finishedBy: .merchant))
        #expect(granted.to == .finished && granted.transactionID == "T4")
        #expect(try store.order(id: "A4")?.finishedBy == .merchant && store.order(id: "A4")?.verifiedTransactionID == "T4")
        // The lease is gone: applying again changes nothing.
        let again = try complete(store, orders["A2"]!, .verified(Grant(), finishes: true, finishedBy: .merchant))
        #expect(!again.applied)
        #expect(try store.order(id: "A2")?.state == .rejected)
        // A completion by another owner changes nothing.
        _ = try act(store, .retry, ["A2"])
        let reclaimed = try #require(try claim(store, at: t0 + 20).first { $0.orderID == "A2" })
        let foreign = try store.complete(
            [AttemptCompletion(order: reclaimed, records: [], resolution: .delivered, charged: true)], owner: "node-b:2:y", now: t0 + 21)
        #expect(foreign.first?.applied == false)
        #expect(try store.order(id: "A2")?.state == .verifying)
    }

    @Test("a turn completing many orders at once links each history row to its own order's last request", arguments: ContractStore.all)
    func completionsTogether(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        let ids = (1...12).map { "M\($0)" }
        _ = try store.ingest(ids.map { candidate($0) }, verifierKind: .apple, now: t0)
        // Two rounds: the second round's rows must link to the second request, not the first.
        for round in 0..<2 {
            let claimed = try claim(store, at: t0 + Double(round * 100)).sorted { $0.orderID < $1.orderID }
            #expect(claimed.count == ids.count)
            let completions = claimed.enumerated().map { index, order in
                AttemptCompletion(
                    order: order, records: [request(1000 * round + index, outcome: .answered)],
                    resolution: .retry(at: t0 + Double(round * 100 + 50), reason: Reason(.http(503), detail: "round \(round)")), charged: true)
            }
            let results = try store.complete(completions, owner: owner, now: t0 + Double(round * 100 + 1))
            #expect(results.allSatisfy { $0.applied })
            for (index, order) in claimed.enumerated() {
                let last = try #require(try store.history(orderID: order.orderID).last)
                #expect(last.verifierStatus == 1000 * round + index && last.reason == "http_503" && last.to == .pending, "\(order.orderID)")
                let stored = try store.order(id: order.orderID)
                #expect(stored?.nextAttemptAt == t0 + Double(round * 100 + 50))
            }
        }
    }

    @Test("an uncharged completion gives the attempt back; 21002 answers are counted", arguments: ContractStore.all)
    func charges(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        var order = try #require(try claim(store).first)
        _ = try complete(store, order, .retry(at: t0 + 1, reason: Reason(.apple(21004))), charged: false)
        #expect(try store.order(id: "A1")?.attempts == 0)
        order = try #require(try claim(store, at: t0 + 2).first)
        _ = try complete(store, order, .retry(at: t0 + 3, reason: Reason(.apple(21002)), malformed: true), at: t0 + 2)
        order = try #require(try claim(store, at: t0 + 4).first)
        #expect(order.malformedAnswers == 1 && order.attempt == 2)
    }

    @Test("matching claims a transaction once: a second order for the same purchase is escalated naming the first", arguments: ContractStore.all)
    func transactionClaims(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        let items = [AppleReceiptItem(productID: "gems", transactionID: "500", originalTransactionID: "500", purchaseDateMilliseconds: 1)]
        let orders = try claim(store)
        let results = try store.complete(
            orders.map { AttemptCompletion(order: $0, records: [request()], resolution: .match(items: items, environment: "Production", finishes: true), charged: true) },
            owner: owner, now: t0 + 1)
        #expect(results.map(\.to).sorted { $0.rawValue < $1.rawValue } == [.escalated, .finished])
        let loser = try #require(results.first { $0.to == .escalated })
        let winner = try #require(results.first { $0.to == .finished })
        #expect(loser.reason.code == .duplicateTransaction && loser.reason.detail == "transaction 500 is claimed by order \(winner.orderID)")
        #expect(try store.order(id: winner.orderID)?.verifiedTransactionID == "500")
        // resolve with a transaction another order holds is refused.
        #expect(try act(store, .resolve, [loser.orderID], note: "n", transaction: "500") == [.refused("transaction 500 is already claimed by order \(winner.orderID)")])
        // retrying the duplicate needs --force.
        guard case .refused(let why) = try act(store, .retry, [loser.orderID])[0] else { Issue.record("retry not refused"); return }
        #expect(why.contains("transaction 500 is claimed by order \(winner.orderID)") && why.contains("--force"))
        #expect(try act(store, .retry, [loser.orderID], force: true) == [.applied(from: .escalated, to: .pending)])
    }

    @Test("delivery: verified orders are due for delivery; delivered finishes; a refusal escalates and a retry delivers again", arguments: ContractStore.all)
    func delivery(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try make(store, "D1", .verified)
        #expect(try store.nextDueTime(.deliver) == t0 + 1)
        let order = try #require(try claim(store, .deliver, at: t0 + 2).first)
        #expect(order.grant?.transactionID == "T-D1" && order.kind == .deliver)
        #expect(try complete(store, order, .escalate(Reason(.endpointHTTP(.delivery, 422))), at: t0 + 3).to == .escalated)
        #expect(try act(store, .retry, ["D1"]) == [.applied(from: .escalated, to: .verified)])
        let again = try #require(try claim(store, .deliver, at: t0 + 20).first)
        #expect(try complete(store, again, .delivered, at: t0 + 21).to == .finished)
        #expect(try store.order(id: "D1")?.finishedBy == .delivery && store.order(id: "D1")?.deliveryAttempts == 2)
    }

    @Test("new proof during an attempt: a refusal of the old proof does not stand", arguments: ContractStore.all)
    func newProofDuringAttempt(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        #expect(try store.ingest([candidate("A1", receipt: "TkVX")], verifierKind: .apple, now: t0 + 1) == [.proofReplaced(from: .verifying, to: .verifying)])
        let result = try complete(store, order, .reject(Reason(.apple(21010))), at: t0 + 2)
        #expect(result.to == .pending && result.reason.code == .newProof)
        let retried = try #require(try claim(store, at: t0 + 3).first)
        #expect(retried.proof.receipt == "TkVX")
    }

    @Test("released leases: verifying orders are due again, a deferred action applies", arguments: ContractStore.all)
    func releaseLeases(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        // Leased by an earlier start of this node (a shared store releases only its node's).
        let earlier = (store as? any SharedOrderStore).map { "\($0.node)/earlier-start" } ?? owner
        _ = try claim(store, owner: earlier)
        #expect(try act(store, .hold, ["A2"]) == [.deferred(state: .verifying)])
        #expect(try Set(store.releaseLeases(now: t0 + 5)) == ["A1", "A2"])
        #expect(try store.order(id: "A1")?.state == .pending && store.order(id: "A1")?.nextAttemptAt == t0 + 5 && store.order(id: "A1")?.attempts == 1)
        #expect(try store.order(id: "A2")?.state == .held)
        #expect(try store.history(orderID: "A1").last?.reason == "lease_released")
    }

    // MARK: - Operator verbs (DESIGN §4, §10)

    @Test("operator verbs from every state follow the table; refusals name the state", arguments: ContractStore.all)
    func operatorTable(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        // Revoked orders: the operator table allows nothing on them (OperatorRulesTests); no
        // store call makes one yet.
        for state in OrderState.allCases where state != .verifying && state != .revoked {
            for action in OperatorAction.allCases {
                let id = "\(state.rawValue)-\(action.rawValue)"
                try make(store, id, state)
                let stored = try #require(try store.order(id: id))
                let expected = try? OrderLifecycle.next(
                    from: state, on: .operatorAction(action),
                    context: .init(resumeState: stored.resumeState, hasUsableProof: stored.proof.isUsable(by: .apple)))
                let result = try act(store, action, [id], note: "n")[0]
                switch (expected, result) {
                case (.moveTo(let to)?, .applied(let from, let applied)):
                    #expect(from == state && applied == to, "\(id): \(applied), table \(to)")
                    #expect(try store.order(id: id)?.state == to)
                    #expect(try store.history(orderID: id).last?.actor == alice)
                case (nil, .refused):
                    #expect(try store.order(id: id)?.state == state)
                default:
                    Issue.record("\(id): table \(String(describing: expected)), store \(result)")
                }
            }
        }
    }

    @Test("hold remembers, release restores; retry --reset-attempts restarts the age clock; an unknown order is not found", arguments: ContractStore.all)
    func holdReleaseRetry(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try make(store, "E1", .escalated)
        #expect(try act(store, .hold, ["E1"]) == [.applied(from: .escalated, to: .held)])
        #expect(try act(store, .release, ["E1"]) == [.applied(from: .held, to: .escalated)])
        #expect(try store.order(id: "E1")?.reason == "no_matching_purchase")
        #expect(try act(store, .retry, ["E1"], reset: true, at: t0 + 100) == [.applied(from: .escalated, to: .pending)])
        let retried = try #require(try store.order(id: "E1"))
        #expect(retried.attempts == 0 && retried.receivedAt == t0 + 100 && retried.nextAttemptAt == t0 + 100)
        #expect(try act(store, .hold, ["NOPE"]) == [.notFound])
        #expect(try act(store, .resolve, ["E1"], note: "paid", transaction: "T77") == [.applied(from: .pending, to: .finished)])
        #expect(try store.order(id: "E1")?.finishedBy == .operator && store.order(id: "E1")?.verifiedTransactionID == "T77")
    }

    @Test("bulk retry by state: every order in that state, each one's outcome", arguments: ContractStore.all)
    func bulkRetry(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        for id in ["E1", "E2", "E3"] { try make(store, id, .escalated) }
        try make(store, "R1", .rejected)
        let outcomes = try store.apply(OperatorRequest(action: .retry, target: .state(.escalated), actor: alice), verifierKind: .apple, now: t0 + 10)
        #expect(Set(outcomes.map(\.orderID)) == ["E1", "E2", "E3"])
        #expect(outcomes.allSatisfy { $0.result == .applied(from: .escalated, to: .pending) })
        #expect(try store.countsByState()[.escalated] == nil && store.countsByState()[.rejected] == 1)
    }

    @Test("an action on an order in flight waits for the attempt (one at a time) and is applied when it ends", arguments: ContractStore.all)
    func deferredActions(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1")], verifierKind: .apple, now: t0)
        let order = try #require(try claim(store).first)
        #expect(try act(store, .cancel, ["A1"], note: "fraud") == [.deferred(state: .verifying)])
        guard case .refused(let why) = try act(store, .hold, ["A1"])[0] else { Issue.record("second action not refused"); return }
        #expect(why.contains("an earlier cancel by operator:alice"))
        let result = try complete(store, order, .retry(at: t0 + 60, reason: Reason(.http(503))), at: t0 + 20)
        #expect(result.to == .cancelled && result.appliedAction == .cancel && result.appliedBy == alice)
        #expect(try store.order(id: "A1")?.state == .cancelled && store.order(id: "A1")?.nextAttemptAt == nil)
        #expect(try store.history(orderID: "A1").suffix(2).map(\.to) == [.pending, .cancelled])
    }

    // MARK: - Waiting, clock, pruning, counts

    @Test("waiting orders expire; a verifier that can use their proof makes them pending", arguments: ContractStore.all)
    func waiting(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("W1", receipt: nil, transactionID: "1")], verifierKind: .apple, now: t0)
        _ = try store.ingest([candidate("W2", receipt: nil, transactionID: "2")], verifierKind: .apple, now: t0 + 100)
        #expect(try store.oldestWaitingReceivedAt() == t0)
        let expired = try store.expireWaiting(receivedBefore: t0 + 50, now: t0 + 200, limit: 10)
        #expect(expired.map(\.orderID) == ["W1"] && expired[0].to == .expired && expired[0].reason.code == .maxAge)
        #expect(try store.promoteWaiting(usableBy: .apple, now: t0 + 201) == 0)
        #expect(try store.promoteWaiting(usableBy: .appstore, now: t0 + 201) == 1)
        #expect(try store.order(id: "W2")?.state == .pending && store.order(id: "W2")?.nextAttemptAt == t0 + 201)
        #expect(try store.oldestWaitingReceivedAt() == nil)
    }

    @Test("after a clock step back, attempts beyond the limit are brought to it", arguments: ContractStore.all)
    func clamp(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1"), candidate("A2")], verifierKind: .apple, now: t0)
        let orders = try claim(store)
        _ = try complete(store, orders[0], .retry(at: t0 + 10_000, reason: Reason(.http(503))))
        _ = try complete(store, orders[1], .retry(at: t0 + 50, reason: Reason(.http(503))))
        #expect(try store.clampNextAttempts(notAfter: t0 + 100) == 1)
        #expect(try store.nextDueTime(.verify) == t0 + 50)
        #expect(try store.order(id: orders[0].orderID)?.nextAttemptAt == t0 + 100)
    }

    @Test("closing a circuit by hand: the orders parked until its cool-down's end become due now, the others keep their time", arguments: ContractStore.all)
    func makeDue(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        _ = try store.ingest([candidate("A1"), candidate("A2"), candidate("A3")], verifierKind: .apple, now: t0)
        let orders = try claim(store)
        _ = try complete(store, orders[0], .retry(at: t0 + 600, reason: Reason(.connectionRefused)))
        _ = try complete(store, orders[1], .retry(at: t0 + 600.4, reason: Reason(.connectionRefused)))
        _ = try complete(store, orders[2], .retry(at: t0 + 30, reason: Reason(.http(503))))
        #expect(try store.makeDue(of: [.deliver], dueFrom: t0 + 599, to: t0 + 601, now: t0 + 5) == 0, "another kind")
        #expect(try store.makeDue(of: [.verify, .verifyPlay], dueFrom: t0 + 599, to: t0 + 601, now: t0 + 5) == 2)
        #expect(try store.order(id: orders[0].orderID)?.nextAttemptAt == t0 + 5)
        #expect(try store.order(id: orders[1].orderID)?.nextAttemptAt == t0 + 5)
        #expect(try store.order(id: orders[2].orderID)?.nextAttemptAt == t0 + 30)
    }

    @Test("pruning drops the receipts of old finished and cancelled orders only; rows and history stay", arguments: ContractStore.all)
    func prune(_ kind: ContractStore) async throws {
        let opened = try await kind.open()
        defer { opened.close() }
        let store = opened.store
        try make(store, "F1", .finished)
        try make(store, "C1", .cancelled)
        try make(store, "P1", .pending)
        #expect(try store.pruneFinished(before: t0 + 1_000, now: t0 + 2_000) == 2)
        let pruned = try #require(try store.order(id: "F1"))
        #expect(pruned.proof.receipt == nil && pruned.prunedAt == t0 + 2_000 && pruned.state == .finished)
        #expect(try !store.history(orderID: "F1").isEmpty)
        #expect(try store.order(id: "P1")?.proof.receipt == "QUJD")
        #expect(try store.pruneFinished(before: t0 + 1_000, now: t0 + 3_000) == 0)
    }
}
