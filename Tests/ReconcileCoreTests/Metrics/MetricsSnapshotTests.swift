import Foundation
import Testing
import TestSupport
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Metrics: the daemon's snapshot")
struct MetricsSnapshotTests {
    static let started = Date(timeIntervalSince1970: 1_800_000_000)

    static func busy() -> MetricsSnapshot {
        var merchant = LatencyHistogram()
        merchant.record(.milliseconds(40))
        merchant.record(.milliseconds(120))
        merchant.record(.seconds(12))
        return MetricsSnapshot(
            version: "1.2.3", startedAt: started, takenAt: started + 600,
            ordersByState: [.pending: 12, .verifying: 3, .finished: 1000, .escalated: 1],
            oldestPendingReceivedAt: started + 450, attemptsInFlight: 3, attemptsStarted: 1016,
            outcomes: ["verified": 1000, "transient": 14, "escalate": 1, "weird": 1],
            transitions: [.finished: 1000, .escalated: 1, .pending: 14],
            circuits: [
                MetricsSnapshot.Circuit(endpoint: .delivery, state: .halfOpen, openings: 2, pausedUntil: started + 700),
                MetricsSnapshot.Circuit(endpoint: .merchant, state: .closed, openings: 0),
            ],
            requestDurations: [.merchant: merchant, .delivery: LatencyHistogram()],
            spoolFiles: [.accepted: 1016, .rejected: 2])
    }

    @Test("every family parses strictly; names are reconciled_…, counters …_total, times …_seconds")
    func wellFormed() throws {
        let snapshot = Self.busy()
        let text = PrometheusExposition.render(snapshot.families)
        let parsed = try PrometheusText(parsing: text)
        #expect(parsed.families.count == snapshot.families.count)
        for family in parsed.families {
            #expect(family.name.hasPrefix("reconciled_"))
            #expect((family.type == "counter") == family.name.hasSuffix("_total"), "\(family.name)")
            if family.name.contains("time") || family.name.contains("age") || family.name.contains("duration") {
                #expect(family.name.hasSuffix("_seconds"), "\(family.name)")
            }
            #expect(!(family.help ?? "").isEmpty)
        }
    }

    @Test("the numbers: every state (zeros included), the oldest pending order, attempts, outcomes, circuits, spool files")
    func numbers() throws {
        let parsed = try PrometheusText(parsing: PrometheusExposition.render(Self.busy().families))
        #expect(parsed.value("reconciled_build_info", ["version": "1.2.3"]) == 1)
        #expect(parsed.value("reconciled_start_time_seconds") == 1_800_000_000)
        #expect(parsed.samples("reconciled_orders").map { $0.labels["state"]! } == OrderState.allCases.map(\.rawValue))
        #expect(parsed.value("reconciled_orders", ["state": "pending"]) == 12)
        #expect(parsed.value("reconciled_orders", ["state": "held"]) == 0)
        #expect(parsed.value("reconciled_oldest_pending_order_received_timestamp_seconds") == 1_800_000_450)
        #expect(parsed.value("reconciled_oldest_pending_order_age_seconds") == 150)
        #expect(parsed.value("reconciled_attempts_in_flight") == 3)
        #expect(parsed.value("reconciled_attempts_started_total") == 1016)
        // The known classes in a fixed order, zeros included; an unknown one after them.
        #expect(parsed.samples("reconciled_attempt_outcomes_total").map { $0.labels["class"]! } == MetricsSnapshot.outcomeClasses + ["weird"])
        #expect(parsed.value("reconciled_attempt_outcomes_total", ["class": "reject"]) == 0)
        #expect(parsed.value("reconciled_order_transitions_total", ["to": "finished"]) == 1000)
        #expect(parsed.value("reconciled_order_transitions_total", ["to": "expired"]) == 0)
        // Endpoints in their declared order, one series per state, exactly one of them 1.
        #expect(parsed.samples("reconciled_circuit_state").map { $0.labels["endpoint"]! } == Array(repeating: "merchant", count: 3) + Array(repeating: "delivery", count: 3))
        #expect(parsed.value("reconciled_circuit_state", ["endpoint": "delivery", "state": "half-open"]) == 1)
        #expect(parsed.value("reconciled_circuit_state", ["endpoint": "delivery", "state": "open"]) == 0)
        #expect(parsed.value("reconciled_circuit_state", ["endpoint": "merchant", "state": "closed"]) == 1)
        #expect(parsed.samples("reconciled_circuit_state").map(\.value).reduce(0, +) == 2)
        #expect(parsed.value("reconciled_circuit_openings_total", ["endpoint": "delivery"]) == 2)
        // A 429's pause: until when, as a time stamp (the file is not rewritten when it ends); 0 for none.
        #expect(parsed.samples("reconciled_endpoint_paused_until_timestamp_seconds").map { $0.labels["endpoint"]! } == ["merchant", "delivery"])
        #expect(parsed.value("reconciled_endpoint_paused_until_timestamp_seconds", ["endpoint": "delivery"]) == 1_800_000_700)
        #expect(parsed.value("reconciled_endpoint_paused_until_timestamp_seconds", ["endpoint": "merchant"]) == 0)
        #expect(parsed.value("reconciled_request_duration_seconds_count", ["endpoint": "merchant"]) == 3)
        #expect(parsed.value("reconciled_request_duration_seconds_bucket", ["endpoint": "merchant", "le": "0.05"]) == 1)
        #expect(parsed.value("reconciled_request_duration_seconds_bucket", ["endpoint": "merchant", "le": "10"]) == 2)
        #expect(parsed.value("reconciled_request_duration_seconds_sum", ["endpoint": "merchant"]) == 12.16)
        #expect(parsed.value("reconciled_request_duration_seconds_count", ["endpoint": "delivery"]) == 0)
        #expect(parsed.samples("reconciled_request_duration_seconds_count").map { $0.labels["endpoint"]! } == ["merchant", "delivery"])
        #expect(parsed.samples("reconciled_spool_files_total").map { $0.labels["outcome"]! } == MetricsSnapshot.SpoolFileOutcome.allCases.map(\.rawValue))
        #expect(parsed.value("reconciled_spool_files_total", ["outcome": "rejected"]) == 2)
        #expect(parsed.value("reconciled_spool_files_total", ["outcome": "duplicate"]) == 0)
    }

    @Test("with nothing pending the timestamp is absent and the age 0; a fresh daemon writes zeros")
    func idle() throws {
        let snapshot = MetricsSnapshot(version: "1", startedAt: Self.started, takenAt: Self.started)
        let parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.family("reconciled_oldest_pending_order_received_timestamp_seconds")?.samples.isEmpty == true)
        #expect(parsed.value("reconciled_oldest_pending_order_age_seconds") == 0)
        #expect(parsed.samples("reconciled_orders").allSatisfy { $0.value == 0 })
        #expect(parsed.samples("reconciled_orders").count == OrderState.allCases.count)
        #expect(parsed.family("reconciled_circuit_state")?.samples.isEmpty == true)
    }

    @Test("the outbox's backlog and the unmatched store notifications: zeros when idle, the oldest owed action's time only when one is owed")
    func outboxAndNotifications() throws {
        var snapshot = MetricsSnapshot(version: "1", startedAt: Self.started, takenAt: Self.started)
        var parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.value("reconciled_outbox_actions", ["state": "pending"]) == 0 && parsed.value("reconciled_outbox_actions", ["state": "escalated"]) == 0)
        #expect(parsed.family("reconciled_oldest_pending_action_created_timestamp_seconds")?.samples.isEmpty == true)
        #expect(parsed.value("reconciled_notifications_unmatched") == 0)
        snapshot.outbox = OutboxSummary(pending: 3, escalated: 1, oldestPendingCreatedAt: Self.started.addingTimeInterval(-60))
        snapshot.unmatchedNotifications = 2
        parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.value("reconciled_outbox_actions", ["state": "pending"]) == 3 && parsed.value("reconciled_outbox_actions", ["state": "escalated"]) == 1)
        #expect(parsed.value("reconciled_oldest_pending_action_created_timestamp_seconds") == Self.started.timeIntervalSince1970 - 60)
        #expect(parsed.value("reconciled_notifications_unmatched") == 2)
    }

    @Test("discovered purchases: waiting and no_account always present, zeros when idle; the oldest waiting one's time only when one waits")
    func discovered() throws {
        var snapshot = MetricsSnapshot(version: "1", startedAt: Self.started, takenAt: Self.started)
        var parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.value("reconciled_discovered_purchases", ["status": "waiting"]) == 0)
        #expect(parsed.value("reconciled_discovered_purchases", ["status": "no_account"]) == 0)
        #expect(parsed.family("reconciled_oldest_waiting_discovered_timestamp_seconds")?.samples.isEmpty == true)
        snapshot.discovered = DiscoverySummary(waiting: 4, oldestWaitingDiscoveredAt: Self.started.addingTimeInterval(-300), noAccount: 2)
        parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.value("reconciled_discovered_purchases", ["status": "waiting"]) == 4)
        #expect(parsed.value("reconciled_discovered_purchases", ["status": "no_account"]) == 2)
        #expect(parsed.value("reconciled_oldest_waiting_discovered_timestamp_seconds") == Self.started.timeIntervalSince1970 - 300)
    }

    @Test("discovered purchases by source and outcome: what the journal counted, one sample each")
    func discoveredEvents() throws {
        let counters = DiscoveryCounters()
        let logger = Logger.discarding
        let purchase = DiscoveredPurchase(
            store: .appStore, transactionKey: "7", productID: "gems", proof: OrderProof(transactionID: "7", signedTransaction: "a.b.c"), via: .history)
        DiscoveryJournal.report(.recorded(.waiting(until: Self.started)), of: purchase, via: "polled", logger: logger, counters: counters)
        DiscoveryJournal.report(.known(.waiting(until: Self.started)), of: purchase, via: "polled", logger: logger, counters: counters)
        DiscoveryJournal.report(DiscoverySettlement(purchase: purchase, status: .becameOrder(orderID: "apple:7")), logger: logger, counters: counters)
        let found = LookedUpPurchase(purchase: purchase, state: .refunded)
        DiscoveryJournal.recovered(
            .appStore("MK1"), results: [RecoveredPurchase(found: found, result: .left(.notPaid(.refunded)))], actor: "operator:a", note: nil,
            logger: logger, counters: counters)
        var snapshot = MetricsSnapshot(version: "1", startedAt: Self.started, takenAt: Self.started)
        snapshot.discoveredEvents = counters.snapshot
        let parsed = try PrometheusText(parsing: PrometheusExposition.render(snapshot.families))
        #expect(parsed.family("reconciled_discovered_purchases_total")?.samples.count == 4)
        for (source, outcome) in [("history", "waiting"), ("history", "known"), ("history", "became_order"), ("recover", "left_refunded")] {
            #expect(parsed.value("reconciled_discovered_purchases_total", ["source": source, "outcome": outcome]) == 1, "\(source) \(outcome)")
        }
    }

    @Test("the same numbers give the same text, whatever order the dictionaries were filled in")
    func deterministic() {
        let snapshot = Self.busy()
        var shuffled = snapshot
        shuffled.ordersByState = Dictionary(uniqueKeysWithValues: snapshot.ordersByState.shuffled())
        shuffled.outcomes = Dictionary(uniqueKeysWithValues: snapshot.outcomes.shuffled())
        shuffled.requestDurations = Dictionary(uniqueKeysWithValues: snapshot.requestDurations.shuffled())
        shuffled.circuits.reverse()
        #expect(PrometheusExposition.render(shuffled.families) == PrometheusExposition.render(snapshot.families))
    }
}
