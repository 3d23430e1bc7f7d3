import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileEngine
import ReconcileFoundation
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem
import Synchronization

/// Answers control-socket requests (DESIGN §10): status, wake, reload and the operator's actions.
/// Write operations need a privileged peer; the peer's user (from `SO_PEERCRED`, or the
/// `SUDO_USER` root passes on) becomes the actor recorded in the history.
final class ControlHandler: Sendable {
    let store: any OperableOrderStore
    let scheduler: Scheduler
    /// How recent a node's heartbeat must be to list it live (a shared store).
    let liveWindow: Duration
    let configPath: String
    let startedAt = Date()
    /// Changes with each successful reload.
    let generation = Atomic<Int>(1)
    /// The verifiers configured now (a retried order's proof must suit one of them).
    let verifiers: Mutex<ConfiguredVerifiers>
    /// Asks the stores about a customer's order (`lookup`, `recover`), with the credentials
    /// configured now.
    let support: Mutex<SupportLookup>
    /// Asks the daemon's main loop to reload and reports the result (the new generation).
    let requestReload: @Sendable () async -> Result<Int, ReloadFailure>
    /// Called after an operator's action changed orders (the status line and the metrics file follow).
    let ordersChanged: @Sendable () -> Void
    let logger: Logger
    /// Set when the daemon begins stopping: a bulk action ends after the batch in hand and
    /// says how far it got.
    let stopping = Atomic<Bool>(false)
    /// Actions naming more orders than this log one summary line; per-order lines go to debug.
    static let perOrderLogLimit = 10

    init(
        store: any OperableOrderStore, scheduler: Scheduler, configPath: String, verifiers: ConfiguredVerifiers, support: SupportLookup,
        logger: Logger,
        liveWindow: Duration = .seconds(105), ordersChanged: @escaping @Sendable () -> Void = {},
        requestReload: @escaping @Sendable () async -> Result<Int, ReloadFailure>
    ) {
        self.store = store
        self.liveWindow = liveWindow
        self.scheduler = scheduler
        self.configPath = configPath
        self.verifiers = Mutex(verifiers)
        self.support = Mutex(support)
        self.logger = logger
        self.requestReload = requestReload
        self.ordersChanged = ordersChanged
    }

    /// The daemon is stopping: bulk actions end after their batch in hand.
    func beginStopping() {
        stopping.store(true, ordering: .sequentiallyConsistent)
    }

    /// Answers one request, on the connection's own thread (store calls block it, not the pool).
    func handle(_ line: [UInt8], peer: ControlSocketServer.Peer) -> String {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            return ControlResponse.error(error.description)
        }
        if request.operation.isWrite && !peer.mayWrite {
            logger.warning(
                "control: refused \(request.operation.rawValue) from uid \(peer.uid) (\(peer.userName ?? "unknown")): not root nor in the daemon's group",
                [.reason: ReasonCode.permissionDenied.rawValue])
            return ControlResponse.error(
                "permission denied: \(request.operation.rawValue) needs root or membership in the daemon's group (you are \(peer.userName ?? "uid \(peer.uid)"))")
        }
        switch request.operation {
        case .status:
            return status()
        case .wake:
            scheduler.nudge()
            return ControlResponse.ok()
        case .reload:
            guard request.wait else {
                Task { [requestReload] in _ = await requestReload() }
                return ControlResponse.ok(JSONObject(["reload": .string("started")]))
            }
            switch AsyncResult.wait(requestReload) {
            case .success(let generation):
                return ControlResponse.ok(JSONObject(["generation": .integer(generation)]))
            case .failure(let failure):
                return ControlResponse.error(failure.description)
            }
        case .retry, .hold, .release, .resolve, .cancel:
            return operate(request, peer: peer)
        case .lookup, .recover:
            return askStore(request, peer: peer)
        case .circuit:
            return steerCircuit(request, peer: peer)
        }
    }

    /// `circuit ENDPOINT --probe-now | --close`: the scheduler steers the circuit and says how it is.
    private func steerCircuit(_ request: ControlRequest, peer: ControlSocketServer.Peer) -> String {
        guard let endpoint = request.endpoint, let action = request.circuitAction else {
            return ControlResponse.error("circuit needs \"endpoint\" and \"circuit_action\"")
        }
        let actor = Self.actor(of: peer, request: request).description
        guard let steered = AsyncResult.wait({ [scheduler] in await scheduler.steerCircuit(endpoint, action, actor: actor) }) else {
            let known = AsyncResult.wait { [scheduler] in await scheduler.status() }.endpoints.map(\.endpoint.rawValue)
            return ControlResponse.error("this daemon does not talk to \(endpoint.rawValue); its endpoints: \(known.joined(separator: ", "))")
        }
        return ControlResponse.ok(JSONObject([
            "endpoint": .string(endpoint.rawValue), "state": .string(steered.state), "changed": .bool(steered.changed),
        ]))
    }

    /// `lookup` and `recover` (DESIGN §5b): the store is asked about the customer's order with the
    /// daemon's credentials, then the store of orders says which order holds each purchase or
    /// (`recover`) makes orders for those none holds. The connection's thread waits for the
    /// store's answer; the scheduler's bucket paces the requests.
    private func askStore(_ request: ControlRequest, peer: ControlSocketServer.Peer) -> String {
        guard let id = request.storeOrderID else { return ControlResponse.error("\(request.operation.rawValue) needs \"store_order_id\"") }
        let actor = Self.actor(of: peer, request: request).description
        let verb = request.operation == .lookup ? "looked up" : "recover of"
        let support = support.withLock { $0 }
        let answer = AsyncResult.wait { [scheduler] in await support.lookUp(id, package: request.package, gate: scheduler) }
        let found: [LookedUpPurchase]
        switch answer {
        case .failure(let failure):
            DiscoveryJournal.lookupFailed(id, verb: verb, why: failure.description, actor: actor, logger: logger)
            return ControlResponse.error(failure.description)
        case .success(let purchases):
            found = purchases
        }
        var object = JSONObject(["store": .string(id.store.rawValue), "store_order_id": .string(id.id)])
        do {
            if request.operation == .lookup {
                let held = try store.holdings(of: found)
                DiscoveryJournal.lookedUp(id, purchases: held, actor: actor, logger: logger)
                object["purchases"] = .array(held.map(\.json))
                return ControlResponse.ok(JSONObject(["lookup": .object(object)]))
            }
            let results = try store.recover(
                found, user: request.user, allowTestPurchases: support.allowTestPurchases, verifiers: verifiers.withLock { $0 }, now: Date(),
                digest: { SHA256.hexDigest($0) })
            DiscoveryJournal.recovered(id, results: results, actor: actor, note: request.note, logger: logger)
            if results.contains(where: { if case .made = $0.result { true } else { false } }) {
                scheduler.nudge()
                ordersChanged()
            }
            object["purchases"] = .array(results.map(\.json))
            return ControlResponse.ok(JSONObject(["recover": .object(object)]))
        } catch {
            return ControlResponse.error("the store failed: \(error)")
        }
    }

    /// The actor to record: the peer's user, or the operator behind `sudo` when root or the
    /// daemon's own user (`sudo -u reconciled reconcilectl …`) says so.
    static func actor(of peer: ControlSocketServer.Peer, request: ControlRequest) -> TransitionActor {
        if peer.uid == 0 || peer.uid == geteuid(), let behalf = request.onBehalfOf, !behalf.isEmpty, behalf.allSatisfy({ $0.isLetter || $0.isNumber || "._-".contains($0) }) {
            return .operator(behalf)
        }
        return .operator(peer.userName ?? "uid\(peer.uid)")
    }

    private func operate(_ request: ControlRequest, peer: ControlSocketServer.Peer) -> String {
        guard let operatorRequest = request.operatorRequest(actor: Self.actor(of: peer, request: request)) else {
            return ControlResponse.error("not an order operation")
        }
        let action = operatorRequest.action
        let actor = operatorRequest.actor.description
        let note = request.note.map { ": \($0)" } ?? ""
        // `--state` and long lists: one summary line, the orders at debug (DESIGN §8).
        let bulk = request.state != nil || request.orders.count > Self.perOrderLogLimit
        let level: LogLevel = bulk ? .debug : .info
        var all: [OperatorOutcome] = []
        let outcome: BulkOutcome
        do {
            outcome = try store.applyInBatches(
                operatorRequest, verifiers: verifiers.withLock { $0 },
                shouldStop: { self.stopping.load(ordering: .sequentiallyConsistent) }
            ) { [logger] outcome in
                if request.state == nil { all.append(outcome) }
                guard outcome.changed else { return }
                logger.log(
                    level, "\(actor) \(action.rawValue) order \(outcome.orderID)\(note)",
                    [.orderID: outcome.orderID, .actor: actor, .reason: ReasonCode.operatorAction(action).rawValue])
            }
        } catch {
            return ControlResponse.error("the store failed: \(error)")
        }
        if bulk {
            let what = request.state.map { "\(Plural.count(outcome.matched, "\($0.rawValue) order"))" } ?? Plural.count(outcome.matched, "named order")
            var summary = "\(actor) \(action.rawValue) on \(what): \(outcome.changed) changed"
            if outcome.refused > 0 { summary += ", \(outcome.refused) refused" }
            if outcome.notFound > 0 { summary += ", \(outcome.notFound) not found" }
            if outcome.skipped > 0 { summary += ", \(outcome.skipped) had moved on" }
            if outcome.interrupted { summary += "; interrupted by the stop, \(outcome.notReached) not reached" }
            logger.info(
                summary + note, id: .operatorBulkAction,
                [.actor: actor, .reason: ReasonCode.operatorAction(action).rawValue, .count: String(outcome.changed), .orderState: request.state?.rawValue])
        }
        scheduler.nudge()
        if outcome.changed > 0 { ordersChanged() }
        if request.state != nil || outcome.interrupted {
            return ControlResponse.ok(ControlResponse.bulk(outcome))
        }
        return ControlResponse.ok(ControlResponse.outcomes(all))
    }

    private func status() -> String {
        // A store replaced under the daemon is noticed here too, not only at the next write.
        try? (store as? SQLiteOrderStore)?.verifyFile()
        let live = AsyncResult.wait { [scheduler] in await scheduler.status() }
        var object = JSONObject()
        object["daemon"] = .object(JSONObject([
            "pid": .integer(getpid()), "version": .string(ReconcileVersion.current), "started_at": .string(RFC3339.format(startedAt)),
            "uptime_seconds": .integer(Int(Date().timeIntervalSince(startedAt))), "generation": .integer(generation.load(ordering: .relaxed)),
            "config": .string(configPath), "in_flight": .integer(live.inFlight),
        ]))
        object["circuits"] = .array(live.endpoints.map { endpoint in
            .object(JSONObject([
                "endpoint": .string(endpoint.endpoint.rawValue), "state": .string(endpoint.circuit),
                // Every documented field is always there, `null` when it has no value (docs/reconcilectl.md,
                // "JSON output").
                "open_until": endpoint.openUntil.map { .string(RFC3339.format($0)) } ?? .null, "reason": .string(orNull: endpoint.lastReason?.description),
                "openings": .integer(endpoint.openings),
                "paused_until": endpoint.pausedUntil.map { .string(RFC3339.format($0)) } ?? .null,
                "consecutive_failures": .integer(endpoint.consecutiveFailures),
                "last_failure": .string(orNull: endpoint.lastFailure?.description),
            ]))
        })
        let summary: StoreSummary?
        do {
            summary = try store.summary()
        } catch {
            summary = nil
            logger.warning("status: cannot read the store's counts: \(error)", [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
        if let summary {
            object["counts"] = .object(JSONObject(OrderState.allCases.compactMap { state in
                summary.counts[state].map { JSONObject.Member(key: state.rawValue, value: .integer($0)) }
            }))
            object["oldest_pending"] = summary.oldestPendingReceivedAt.map { .string(RFC3339.format($0)) }
            object["next_attempt"] = summary.nextAttemptAt.map { .string(RFC3339.format($0)) }
            object["outbox"] = .object(JSONObject([
                "pending": .integer(summary.outbox.pending), "escalated": .integer(summary.outbox.escalated),
                "oldest_pending": summary.outbox.oldestPendingCreatedAt.map { .string(RFC3339.format($0)) } ?? .null,
                "next_attempt": summary.outbox.nextAttemptAt.map { .string(RFC3339.format($0)) } ?? .null,
            ]))
            object["notifications"] = .object(JSONObject(["unmatched": .integer(summary.unmatchedNotifications)]))
            object["discovered"] = .object(summary.discovered.json)
        }
        if let unreachable = live.storeUnreachableSince {
            object["store_unreachable_since"] = .string(RFC3339.format(unreachable))
        }
        if let shared = store as? any SharedOrderStore {
            object["node"] = .string(shared.node)
            if let nodes = try? shared.nodes(liveWithin: liveWindow) { object["nodes"] = StatusNodes.json(nodes) }
        }
        return ControlResponse.ok(JSONObject(["status": .object(object)]))
    }
}
