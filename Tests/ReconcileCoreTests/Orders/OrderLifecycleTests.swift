import Testing
@testable import ReconcileCore

@Suite("Order lifecycle: the state × event table of DESIGN §4")
struct OrderLifecycleTests {
    /// Every event, under the names the expected table uses.
    static let events: [(String, OrderEvent)] = [
        ("proof", .proofArrived),
        ("attempt", .attemptStarted),
        ("transient", .transientFailure),
        ("verified+finish", .verified(finishesOrder: true)),
        ("verified+deliver", .verified(finishesOrder: false)),
        ("reject", .definitiveReject(escalate: false)),
        ("reject+escalate", .definitiveReject(escalate: true)),
        ("limits", .limitsHit),
        ("delivered", .delivered),
        ("hold", .operatorAction(.hold)),
        ("release", .operatorAction(.release)),
        ("cancel", .operatorAction(.cancel)),
        ("resolve", .operatorAction(.resolve)),
        ("retry", .operatorAction(.retry)),
        ("revoke", .revocationConfirmed),
        ("reversed", .refundReversed),
    ]

    /// DESIGN §4, transcribed cell by cell. "stay" = taken without a state change; "deferred" =
    /// applied when the attempt ends; a missing cell is illegal. Context: no resume state, usable
    /// proof (the context-dependent cells have their own tests below).
    static let expected: [OrderState: [String: String]] = [
        .waiting: ["proof": "pending", "limits": "expired", "hold": "held", "cancel": "cancelled", "resolve": "finished", "revoke": "rejected"],
        .pending: [
            "proof": "pending", "attempt": "verifying", "limits": "escalated",
            "hold": "held", "cancel": "cancelled", "resolve": "finished", "retry": "pending", "revoke": "rejected",
        ],
        .verifying: [
            "proof": "stay", "transient": "pending", "verified+finish": "finished", "verified+deliver": "verified",
            "reject": "rejected", "reject+escalate": "escalated", "limits": "escalated",
            "hold": "deferred", "cancel": "deferred", "resolve": "deferred", "retry": "deferred", "revoke": "deferred",
        ],
        .verified: [
            "attempt": "verified", "transient": "verified", "limits": "escalated", "delivered": "finished",
            "reject+escalate": "escalated", "hold": "held", "resolve": "finished", "revoke": "rejected",
        ],
        .rejected: ["proof": "pending", "retry": "pending", "hold": "held", "cancel": "cancelled", "resolve": "finished", "revoke": "stay"],
        .expired: ["proof": "pending", "retry": "pending", "hold": "held", "cancel": "cancelled", "resolve": "finished", "revoke": "stay"],
        .escalated: [
            "proof": "pending", "retry": "pending", "hold": "held", "cancel": "cancelled", "resolve": "finished", "revoke": "rejected",
        ],
        .held: ["proof": "stay", "release": "pending", "cancel": "cancelled", "resolve": "finished", "revoke": "rejected"],
        .finished: ["revoke": "revoked"],
        .cancelled: ["revoke": "stay"],
        .revoked: ["revoke": "stay", "reversed": "finished"],
    ]

    static func describe(_ outcome: OrderLifecycle.Outcome) -> String {
        switch outcome {
        case .moveTo(let state): state.rawValue
        case .stay: "stay"
        case .deferred: "deferred"
        }
    }

    @Test("every cell", arguments: OrderState.allCases)
    func everyCell(state: OrderState) throws {
        let row = try #require(Self.expected[state])
        for (name, event) in Self.events {
            let result = try? OrderLifecycle.next(from: state, on: event)
            #expect(result.map(Self.describe) == row[name], "\(state) × \(name)")
        }
    }

    @Test("terminal states accept nothing but what the store says of the money (a revocation, a reversed refund)")
    func terminal() {
        for state in OrderState.allCases where state.isTerminal {
            for (_, event) in Self.events where event != .revocationConfirmed && event != .refundReversed {
                #expect(!OrderLifecycle.allows(event, from: state))
            }
        }
    }

    @Test("an illegal transition names the current state")
    func illegalNamesState() {
        do {
            _ = try OrderLifecycle.next(from: .finished, on: .operatorAction(.retry))
            Issue.record("retry of a finished order was allowed")
        } catch {
            #expect(error.state == .finished)
            #expect(error.description == "cannot retry: the order is finished (done)")
        }
        do {
            _ = try OrderLifecycle.next(from: .waiting, on: .attemptStarted)
            Issue.record("an attempt on a waiting order was allowed")
        } catch {
            #expect(error.description.contains("the order is waiting"))
        }
    }

    @Test("retry of an order escalated during delivery goes back to verified")
    func retryEscalatedDelivery() throws {
        let context = OrderLifecycle.Context(resumeState: .verified)
        #expect(try OrderLifecycle.next(from: .escalated, on: .operatorAction(.retry), context: context) == .moveTo(.verified))
    }

    @Test("retry without usable proof waits for proof")
    func retryWithoutProof() throws {
        let context = OrderLifecycle.Context(hasUsableProof: false)
        #expect(try OrderLifecycle.next(from: .expired, on: .operatorAction(.retry), context: context) == .moveTo(.waiting))
    }

    @Test("release returns to the state the order was held in")
    func release() throws {
        for resume in [OrderState.waiting, .pending, .verified, .rejected, .escalated, .expired] {
            let context = OrderLifecycle.Context(resumeState: resume)
            #expect(try OrderLifecycle.next(from: .held, on: .operatorAction(.release), context: context) == .moveTo(resume))
        }
        let noProof = OrderLifecycle.Context(resumeState: nil, hasUsableProof: false)
        #expect(try OrderLifecycle.next(from: .held, on: .operatorAction(.release), context: noProof) == .moveTo(.waiting))
    }

    @Test("actors print and parse")
    func actors() {
        #expect(TransitionActor.daemon.description == "daemon")
        #expect(TransitionActor.operator("alice").description == "operator:alice")
        #expect(TransitionActor("operator:alice") == .operator("alice"))
        #expect(TransitionActor("daemon") == .daemon)
        #expect(TransitionActor("operator:") == nil)
        #expect(TransitionActor("someone") == nil)
    }
}
