import Foundation
import ReconcileCore
import ReconcileFoundation

/// What the scheduler says about each applied attempt (DESIGN §8): `info` for the transitions
/// that matter (finished, rejected, expired), `warning` for escalations, which it also hands to
/// the escalation command; a failed attempt that will be retried at `warning` once a minute per
/// endpoint (the others at `debug`, counted in the next warning), so that a dead endpoint is
/// never silent. Keeps the counters that status and metrics show.
struct CompletionReporter {
    let logger: Logger
    let escalations: EscalationRunner?
    private(set) var counters = Scheduler.Counters()
    /// When each endpoint's last failed-attempt warning went out, and the failures since.
    private var failureWarnings: [VerificationEndpoint: (at: Date, since: Int)] = [:]
    /// At most one failed-attempt warning per endpoint this often.
    static let failureWarningInterval: TimeInterval = 60

    init(logger: Logger, escalations: EscalationRunner?) {
        self.logger = logger
        self.escalations = escalations
    }

    /// The class an outcome is counted under (``MetricsSnapshot/outcomeClasses`` lists them all).
    static func outcomeClass(_ completion: AttemptCompletion) -> String {
        switch completion.resolution {
        case .retry: completion.charged ? "transient" : "uncharged"
        case .reject: "reject"
        case .escalate: "escalate"
        case .verified, .match, .playMatch, .finishedWithoutDelivery: "verified"
        case .delivered: "delivered"
        }
    }

    /// Counts and reports the results of committed completions.
    mutating func committed(_ completions: [AttemptCompletion], _ results: [CompletionResult]) {
        for (completion, result) in zip(completions, results) {
            counters.outcomes[Self.outcomeClass(completion), default: 0] += 1
            report(result, lastRequest: completion.records.last)
        }
    }

    mutating func attemptStarted() {
        counters.attemptsStarted += 1
    }

    mutating func requestsSent(_ count: Int) {
        counters.requestsSent += count
    }

    /// Logs what one applied completion (or expiry) did.
    mutating func report(_ result: CompletionResult, lastRequest: AttemptRecord?) {
        guard result.applied else {
            logger.warning("the lease on order \(result.orderID) was lost; its outcome was not applied", [.orderID: result.orderID])
            return
        }
        let fields: KeyValuePairs<LogField, String?> = [
            .orderID: result.orderID, .orderState: result.to.rawValue, .productID: result.productID,
            .transactionID: result.transactionID, .attempt: String(result.attempts), .reason: result.reason.code.rawValue,
            .nextAttempt: result.nextAttemptAt.map(RFC3339.format), .endpoint: lastRequest?.endpoint.rawValue,
            .verifierStatus: lastRequest?.verifierStatus.map(String.init), .httpStatus: lastRequest?.httpStatus.map(String.init),
        ]
        if let action = result.appliedAction {
            // The operator decided where the order went; the daemon only finished its attempt.
            logger.info(
                "order \(result.orderID) is \(result.to): \(result.appliedBy?.description ?? "an operator")'s \(action.rawValue), applied when its attempt ended",
                [.orderID: result.orderID, .orderState: result.to.rawValue, .productID: result.productID, .reason: ReasonCode.operatorAction(action).rawValue,
                 .actor: result.appliedBy?.description])
            return
        }
        switch result.to {
        case .finished:
            counters.finished += 1
            let how = switch result.reason.code {
            case .granted: "granted by the merchant"
            case .delivered: "delivered"
            case .noDeliveryURL: "verified; no delivery URL is configured"
            default: "verified"
            }
            let transaction = result.transactionID.map { ", transaction \($0)" } ?? ""
            logger.info("order \(result.orderID) finished (\(how)\(transaction))", id: .finished, fields)
        case .rejected:
            counters.rejected += 1
            logger.info("order \(result.orderID) rejected: \(result.reason)", id: .rejected, fields)
        case .escalated:
            counters.escalated += 1
            logger.warning("order \(result.orderID) escalated: \(result.reason)", id: .escalated, fields)
            let notice = EscalationRunner.Notice(
                orderID: result.orderID, productID: result.productID, state: result.to, reason: result.reason.code,
                attempts: result.attempts, transactionID: result.transactionID)
            Task { [escalations] in await escalations?.enqueue(notice) }
        case .expired:
            counters.expired += 1
            logger.info("order \(result.orderID) expired: no usable proof arrived within MaxAge", id: .expired, fields)
        case .pending:
            counters.retried += 1
            guard let request = lastRequest else {
                logger.debug("order \(result.orderID) will be retried (\(result.reason.code))", fields)
                return
            }
            let endpoint = request.endpoint
            if let last = failureWarnings[endpoint], request.startedAt.timeIntervalSince(last.at) < Self.failureWarningInterval {
                failureWarnings[endpoint] = (last.at, last.since + 1)
                logger.debug("order \(result.orderID) will be retried (\(result.reason.code))", fields)
                return
            }
            let before = failureWarnings[endpoint]?.since ?? 0
            failureWarnings[endpoint] = (request.startedAt, 0)
            let next = result.nextAttemptAt.map { "; next attempt at \(RFC3339.format($0))" } ?? ""
            let more = before > 0 ? " (and \(Plural.count(before, "more failed attempt")) there since the last such warning)" : ""
            logger.warning(
                "order \(result.orderID): attempt \(result.attempts) at \(endpoint.rawValue) failed: \(result.reason)\(next)\(more)", fields)
        default:
            logger.debug("order \(result.orderID) is \(result.to) (\(result.reason.code))", fields)
        }
    }

    // MARK: - Outbox

    /// Counts and reports the results of committed outbox completions (DESIGN §5a): done and
    /// skipped at `debug`, an escalation at `warning` with its own MESSAGE_ID, and an action
    /// still failing past its deadline at `err` with its own (each also to the escalation
    /// command, with `RECONCILE_ACTION`).
    mutating func committed(_ completions: [OutboxCompletion], _ results: [OutboxResult]) {
        for (completion, result) in zip(completions, results) {
            report(result, productID: completion.claimed.productID)
        }
    }

    mutating func report(_ result: OutboxResult, productID: String) {
        guard result.applied else {
            logger.warning(
                "the lease on the \(result.kind.rawValue) of order \(result.orderID) was lost; its outcome was not applied", [.orderID: result.orderID])
            return
        }
        counters.actions[result.state.rawValue, default: 0] += 1
        let fields: KeyValuePairs<LogField, String?> = [
            .orderID: result.orderID, .productID: productID, .action: result.kind.rawValue, .reason: result.reason.code.rawValue,
            .attempt: String(result.attempts), .nextAttempt: result.nextAttemptAt.map(RFC3339.format), .endpoint: result.endpoint.rawValue,
        ]
        if result.deadlineWarning {
            counters.actionsOverdue += 1
            let deadline = result.deadline.map { " (deadline \(RFC3339.format($0)))" } ?? ""
            logger.error(
                "the \(result.kind.rawValue) of order \(result.orderID) still fails 48 hours after the purchase\(deadline): Google refunds purchases not acknowledged within three days (\(result.reason))",
                id: .actionOverdue, fields)
            announce(result, productID: productID, reason: .overdue(result.kind))
        }
        switch result.state {
        case .escalated:
            logger.warning("the \(result.kind.rawValue) of order \(result.orderID) escalated: \(result.reason)", id: .actionEscalated, fields)
            announce(result, productID: productID, reason: result.reason.code)
        case .skipped where result.reason.code == .noRevocationURL:
            // DESIGN §5a: without a URL the event is only logged and recorded.
            logger.notice("order \(result.orderID): the merchant is not told of this event ([Revocation] URL= is not configured)", fields)
        case .done, .skipped:
            logger.debug("the \(result.kind.rawValue) of order \(result.orderID) is \(result.state.rawValue) (\(result.reason))", fields)
        case .pending:
            logger.debug("the \(result.kind.rawValue) of order \(result.orderID) will be sent again (\(result.reason.code))", fields)
        }
    }

    /// Hands an outbox action to the escalation command.
    func announce(_ result: OutboxResult, productID: String, reason: ReasonCode) {
        let notice = EscalationRunner.Notice(
            orderID: result.orderID, productID: productID, state: .finished, reason: reason, attempts: result.attempts, transactionID: nil,
            action: result.kind.rawValue)
        Task { [escalations] in await escalations?.enqueue(notice) }
    }
}
