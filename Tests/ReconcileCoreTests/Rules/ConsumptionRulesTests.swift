import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Consumption rules (what Apple's CONSUMPTION_REQUEST queues, without a store)")
struct ConsumptionRulesTests {
    typealias F = RuleFixtures

    static let answering = ConsumptionPolicy(answer: true, customerConsented: true, sampleContentProvided: false, refundPreference: .decline)

    /// A request Apple signed five minutes before `F.now`.
    func request(transaction: String? = "500", environment: String? = "Production", signedAt: Date? = F.now.addingTimeInterval(-300))
        -> StoreNotification
    {
        StoreNotification(
            source: .appStore, notificationID: "c-1", type: "CONSUMPTION_REQUEST", transactionID: transaction, environment: environment,
            signedAt: signedAt, via: .file)
    }

    func apply(
        _ notification: StoreNotification, to record: OrderRecord?, policy: ConsumptionPolicy = Self.answering, now: Date = F.now
    ) throws -> (plan: OrderPlan?, outcome: NotificationRules.Outcome) {
        try NotificationRules.apply(notification, to: record, now: now, lookups: FixedLookups(), consumption: policy)
    }

    func body(_ action: OutboxAction) throws -> JSONObject {
        guard case .object(let payload) = try JSONParser().parse(Array(action.payload.utf8)), case .object(let body)? = payload["request"] else {
            Issue.record("the payload has no request object: \(action.payload)")
            return JSONObject()
        }
        return body
    }

    @Test("a finished order: one answer queued, DELIVERED, the exact request body, keyed by the notification, due now until 12 h after signing")
    func finished() throws {
        let (plan, outcome) = try apply(request(), to: verified(.finished))
        #expect(outcome == .noChange(orderID: "A1", state: .finished))
        let written = try #require(plan)
        #expect(!written.changesRecord, "the order itself does not change")
        let action = try #require(written.outbox.only)
        #expect(action.kind == .consumptionAnswer && action.endpoint == .production && action.state == .pending)
        #expect(action.idempotencyKey == "A1:consumption:c-1" && action.nextAttemptAt == F.now)
        #expect(action.deadline == F.now.addingTimeInterval(-300 + 12 * 3600))
        #expect(action.payloadText("transaction_id") == "500" && action.payloadText("environment") == "Production")
        #expect(
            JSONWriter.string(.object(try body(action)))
                == #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","refundPreference":"DECLINE"}"#)
        let transition = try #require(written.transitions.only)
        #expect(transition.from == .finished && transition.to == .finished && transition.actor == .daemon)
        #expect(transition.reason.code == .consumptionAnswerQueued)
        #expect(transition.reason.detail?.contains("DELIVERED") == true && transition.reason.detail?.contains("notification c-1 (file)") == true)
    }

    /// An order whose purchase a verifier matched (it holds the grant, and the claim).
    func verified(_ state: OrderState, leased: Bool = false) -> OrderRecord {
        var record = F.record(state, leased: leased)
        record.grant = Grant(transactionID: "500", productID: "gems", quantity: 1, environment: "Production")
        return record
    }

    @Test("a revoked order was delivered: DELIVERED; verified orders not delivered (waiting for delivery, escalated there, …): UNDELIVERED_OTHER")
    func deliveryStatus() throws {
        #expect(try body(try #require(apply(request(), to: verified(.revoked)).plan?.outbox.only))["deliveryStatus"]?.stringValue == "DELIVERED")
        for state in [OrderState.verified, .escalated, .held, .rejected] {
            let action = try #require(try apply(request(), to: verified(state)).plan?.outbox.only, "\(state)")
            #expect(try body(action)["deliveryStatus"]?.stringValue == "UNDELIVERED_OTHER", "\(state)")
        }
        // An attempt in flight does not hold the answer up: it says what the order is now.
        let (plan, outcome) = try apply(request(), to: verified(.verified, leased: true))
        #expect(outcome == .noChange(orderID: "A1", state: .verified))
        #expect(try body(try #require(plan?.outbox.only))["deliveryStatus"]?.stringValue == "UNDELIVERED_OTHER")
    }

    @Test("an order never verified (matched only by the transaction its file names) is not answered: whether it was delivered is not known")
    func neverVerified() throws {
        for (state, leased) in [(OrderState.pending, false), (.waiting, false), (.verifying, true), (.escalated, false), (.rejected, false)] {
            let (plan, outcome) = try apply(request(), to: F.record(state, leased: leased))
            #expect(outcome == .noChange(orderID: "A1", state: state), "\(state)")
            #expect(plan?.outbox.isEmpty == true && plan?.changesRecord == false, "\(state)")
            #expect(plan?.transitions.only?.reason.code == .consumptionNotAnswered, "\(state)")
        }
    }

    @Test("the configured fields: sampleContentProvided as set, refundPreference left out unless set, never a consumptionPercentage")
    func configuredFields() throws {
        for preference in ConsumptionPolicy.RefundPreference.allCases {
            let policy = ConsumptionPolicy(answer: true, customerConsented: true, sampleContentProvided: true, refundPreference: preference)
            let body = try body(try #require(apply(request(), to: verified(.finished), policy: policy).plan?.outbox.only))
            #expect(body["sampleContentProvided"] == .bool(true) && body["refundPreference"]?.stringValue == preference.rawValue)
        }
        let plain = ConsumptionPolicy(answer: true, customerConsented: true)
        let body = try body(try #require(apply(request(), to: verified(.finished), policy: plain).plan?.outbox.only))
        #expect(body.keys == ["customerConsented", "sampleContentProvided", "deliveryStatus"])
        #expect(body["customerConsented"] == .bool(true) && body["sampleContentProvided"] == .bool(false))
    }

    @Test("answering off: recorded as before, no history, no action")
    func off() throws {
        let (plan, outcome) = try apply(request(), to: verified(.finished), policy: .off)
        #expect(plan == nil && outcome == .recorded)
        #expect(try apply(request(), to: nil, policy: .off) == (nil, .recorded))
    }

    @Test("no consent: nothing answered; the order's history says why")
    func noConsent() throws {
        let policy = ConsumptionPolicy(answer: true, customerConsented: false, sampleContentProvided: true, refundPreference: .grantFull)
        let (plan, outcome) = try apply(request(), to: verified(.finished), policy: policy)
        #expect(outcome == .noChange(orderID: "A1", state: .finished))
        let written = try #require(plan)
        #expect(written.outbox.isEmpty && !written.changesRecord)
        let reason = try #require(written.transitions.only?.reason)
        #expect(reason.code == .consumptionNotAnswered && reason.detail?.contains("CustomerConsented=no") == true)
    }

    @Test("unmatched: recorded unmatched, nothing answered")
    func unmatched() throws {
        #expect(try apply(request(), to: nil) == (nil, .unmatched))
    }

    @Test("a request that arrives after Apple's 12 hours is recorded consumption_deadline_passed and not answered")
    func late() throws {
        let (plan, outcome) = try apply(request(signedAt: F.now.addingTimeInterval(-12 * 3600)), to: verified(.finished))
        #expect(outcome == .noChange(orderID: "A1", state: .finished))
        #expect(plan?.outbox.isEmpty == true && plan?.transitions.only?.reason.code == .consumptionDeadlinePassed)
        // Just inside: queued.
        let (inside, _) = try apply(request(signedAt: F.now.addingTimeInterval(-12 * 3600 + 1)), to: verified(.finished))
        #expect(inside?.outbox.count == 1)
    }

    @Test("a sandbox request goes to the sandbox endpoint; the deadline check is for consumption answers only")
    func sandboxAndDeadline() throws {
        let action = try #require(try apply(request(environment: "Sandbox"), to: verified(.finished)).plan?.outbox.only)
        #expect(action.endpoint == .sandbox && action.payloadText("environment") == "Sandbox")
        let deadline = try #require(action.deadline)
        #expect(!ConsumptionRules.isPastDeadline(action, now: deadline - 1) && ConsumptionRules.isPastDeadline(action, now: deadline))
        var play = action
        play.kind = .playAcknowledge
        #expect(!ConsumptionRules.isPastDeadline(play, now: deadline + 1))
    }

    @Test("escalated past its deadline, a consumption answer gives no Play deadline warning")
    func noPlayWarning() throws {
        var action = try #require(try apply(request(), to: verified(.finished)).plan?.outbox.only)
        action.reference = 3
        action.lease = OutboxAction.Lease(owner: F.owner, until: F.now.addingTimeInterval(60))
        let late = try #require(action.deadline).addingTimeInterval(1)
        let completion = OutboxCompletion(
            claimed: ClaimedAction(action: action, productID: "gems", proof: OrderProof(transactionID: "500")),
            resolution: .escalate(Reason(.consumptionDeadlinePassed)), charged: true)
        let (after, result) = OutboxRules.complete(completion, for: action, owner: F.owner, now: late)
        #expect(after?.state == .escalated && after?.reason == .consumptionDeadlinePassed)
        #expect(!result.deadlineWarning && after?.warnedAt == nil)
    }
}
