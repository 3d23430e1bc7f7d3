import Foundation
import ReconcileFoundation

extension MetricsSnapshot {
    /// The metrics of DESIGN §8, named `reconciled_…` (`_total` for counters, `_seconds` for
    /// times), in a fixed order with every label value spelled out — zeros included, so that a
    /// series exists before its first event and `rate()` and alerts see it.
    ///
    /// docs/operating.md ("Metrics") lists them; a change here is a change to what dashboards and alerts read.
    public var families: [MetricFamily] {
        var families: [MetricFamily] = []
        func add(_ name: String, _ kind: MetricFamily.Kind, _ help: String, _ samples: [MetricFamily.Sample]) {
            families.append(MetricFamily(name: name, help: help, kind: kind, samples: samples))
        }
        typealias Label = MetricFamily.Label

        add(
            "reconciled_build_info", .gauge, "Always 1; the version of the running reconciled.",
            [.number(1, [Label("version", version)])])
        add(
            "reconciled_start_time_seconds", .gauge, "When the running reconciled started, in seconds since 1970.",
            [.number(startedAt.timeIntervalSince1970)])

        // The store.
        add(
            "reconciled_orders", .gauge, "Orders in the store, by state.",
            OrderState.allCases.map { .number(ordersByState[$0] ?? 0, [Label("state", $0.rawValue)]) })
        add(
            "reconciled_oldest_pending_order_received_timestamp_seconds", .gauge,
            "When the oldest order waiting for verification (pending or verifying) was taken in, in seconds since 1970; absent when none waits. Alert on time() minus this.",
            oldestPendingReceivedAt.map { [.number($0.timeIntervalSince1970)] } ?? [])
        add(
            "reconciled_oldest_pending_order_age_seconds", .gauge,
            "Age of the oldest order waiting for verification (pending or verifying) when the file was last written (at least once a minute); 0 when none waits.",
            [.number(oldestPendingReceivedAt.map { max(0, takenAt.timeIntervalSince($0)) } ?? 0)])

        // The scheduler.
        add("reconciled_attempts_in_flight", .gauge, "Verification and delivery attempts in flight.", [.number(attemptsInFlight)])
        add(
            "reconciled_attempts_started_total", .counter, "Verification and delivery attempts started (circuit probes included).",
            [.number(attemptsStarted)])
        let classes = Self.outcomeClasses + outcomes.keys.filter { !Self.outcomeClasses.contains($0) }.sorted()
        add(
            "reconciled_attempt_outcomes_total", .counter,
            "Attempt outcomes by class: verified, delivered, transient (retried, charged), uncharged (retried, not charged: a probe or a configuration error), reject, escalate.",
            classes.map { .number(outcomes[$0] ?? 0, [Label("class", $0)]) })
        add(
            "reconciled_order_transitions_total", .counter,
            "Orders the daemon moved to a state through its own attempts and expiry (pending: an attempt failed and will be retried).",
            Self.transitionTargets.map { .number(transitions[$0] ?? 0, [Label("to", $0.rawValue)]) })
        let circuits = circuits.sorted { Self.rank($0.endpoint) < Self.rank($1.endpoint) }
        add(
            "reconciled_circuit_state", .gauge,
            "1 for the state each endpoint's circuit breaker is in (closed, half-open or open), 0 for the others.",
            circuits.flatMap { circuit in
                CircuitState.allCases.map { state in
                    .number(circuit.state == state ? 1 : 0, [Label("endpoint", circuit.endpoint.rawValue), Label("state", state.rawValue)])
                }
            })
        add(
            "reconciled_circuit_openings_total", .counter, "How many times each endpoint's circuit breaker opened.",
            circuits.map { .number($0.openings, [Label("endpoint", $0.endpoint.rawValue)]) })
        add(
            "reconciled_endpoint_paused_until_timestamp_seconds", .gauge,
            "Until when nothing is sent to each endpoint after a 429 (its Retry-After, capped at CircuitMaxCooldown), in seconds since 1970; 0 when it is not paused. Paused now: the value is above time().",
            circuits.map { .number($0.pausedUntil?.timeIntervalSince1970 ?? 0, [Label("endpoint", $0.endpoint.rawValue)]) })
        add(
            "reconciled_request_duration_seconds", .histogram,
            "Duration of the HTTP requests sent to each endpoint (verification, sandbox bounces, delivery), failures and time-outs included.",
            VerificationEndpoint.allCases.compactMap { endpoint in
                requestDurations[endpoint].map { MetricFamily.Sample([Label("endpoint", endpoint.rawValue)], .histogram($0)) }
            })

        // The spool.
        add(
            "reconciled_spool_files_total", .counter,
            "Spool files handled, by outcome: accepted (a new order), unchanged, proof_replaced, duplicate (ignored), rejected (moved to rejected/).",
            SpoolFileOutcome.allCases.map { .number(spoolFiles[$0] ?? 0, [Label("outcome", $0.rawValue)]) })

        // The outbox and store notifications (DESIGN §5a).
        add(
            "reconciled_outbox_actions", .gauge,
            "Outbox actions still owed (pending: due or waiting for a retry) or given up on (escalated: needs a person).",
            [.number(outbox.pending, [Label("state", "pending")]), .number(outbox.escalated, [Label("state", "escalated")])])
        add(
            "reconciled_oldest_pending_action_created_timestamp_seconds", .gauge,
            "When the oldest outbox action still owed was written, in seconds since 1970; absent when none is. Alert on time() minus this.",
            outbox.oldestPendingCreatedAt.map { [.number($0.timeIntervalSince1970)] } ?? [])
        add(
            "reconciled_notifications_unmatched", .gauge, "Store notifications taken in that no order holds the transaction of.",
            [.number(unmatchedNotifications)])

        // Purchases the phone never sent (DESIGN §5b).
        add(
            "reconciled_discovered_purchases", .gauge,
            "Purchases a store reported that no order holds yet: waiting (for the phone's order, within [Discovery] Grace=) or no_account (no account to grant it to: needs a person).",
            [.number(discovered.waiting, [Label("status", "waiting")]), .number(discovered.noAccount, [Label("status", "no_account")])])
        add(
            "reconciled_oldest_waiting_discovered_timestamp_seconds", .gauge,
            "When the longest-waiting discovered purchase was first reported, in seconds since 1970; absent when none waits.",
            discovered.oldestWaitingDiscoveredAt.map { [.number($0.timeIntervalSince1970)] } ?? [])
        add(
            "reconciled_discovered_purchases_total", .counter,
            "Purchases the stores reported since start, by source (file, history, pubsub, recover) and outcome: the status they took (waiting, joined, became_order, recorded, no_account, ignored_*), known (reported again), off (Mode=off), left_* (recover made nothing, and why).",
            discoveredEvents.keys.sorted().map { .number(discoveredEvents[$0] ?? 0, [Label("source", $0.source), Label("outcome", $0.outcome)]) })
        return families
    }

    private static func rank(_ endpoint: VerificationEndpoint) -> Int {
        VerificationEndpoint.allCases.firstIndex(of: endpoint) ?? .max
    }
}
