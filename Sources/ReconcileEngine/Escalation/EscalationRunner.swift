import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem

/// Runs `[Escalation] Command=` for escalated orders (DESIGN §6): one at a time, at most
/// `CommandRate` per second, its process group killed after `Timeout=`, with the `RECONCILE_*`
/// variables and never the receipt. A command is done when it exits, whatever it left running
/// in the background; a failure is logged and blocks nothing.
public actor EscalationRunner {
    /// One escalation to announce.
    public struct Notice: Sendable, Hashable {
        public var orderID: String
        public var productID: String
        public var state: OrderState
        public var reason: ReasonCode
        public var attempts: Int
        public var transactionID: String?
        /// For an outbox action (DESIGN §5a): its kind (`play_acknowledge`); the order's state is
        /// where the order is, the attempts the action's.
        public var action: String?

        public init(
            orderID: String, productID: String, state: OrderState, reason: ReasonCode, attempts: Int, transactionID: String?, action: String? = nil
        ) {
            self.orderID = orderID
            self.productID = productID
            self.state = state
            self.reason = reason
            self.attempts = attempts
            self.transactionID = transactionID
            self.action = action
        }

        /// The command's environment: exactly these variables (DESIGN §6), and
        /// `RECONCILE_ACTION` for an outbox action (§5a).
        public var environment: [String: String] {
            var variables = [
                "RECONCILE_ORDER_ID": orderID, "RECONCILE_PRODUCT_ID": productID, "RECONCILE_STATE": state.rawValue,
                "RECONCILE_REASON": reason.rawValue, "RECONCILE_ATTEMPTS": String(attempts), "RECONCILE_TRANSACTION_ID": transactionID ?? "",
            ]
            if let action { variables["RECONCILE_ACTION"] = action }
            return variables
        }
    }

    private var settings: Configuration.EscalationSettings
    private let logger: Logger
    private var queue: [Notice] = []
    private var running = false
    private var lastStart: ContinuousClock.Instant?
    private let clock: any DaemonClock
    /// Callers of ``waitUntilIdle()`` waiting for the queue to empty.
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Notices beyond this many waiting are dropped (logged): the orders stay escalated.
    public let queueLimit = 10_000
    public private(set) var commandsRun = 0
    public private(set) var commandsFailed = 0

    public init(settings: Configuration.EscalationSettings, logger: Logger, clock: any DaemonClock) {
        self.settings = settings
        self.logger = logger
        self.clock = clock
    }

    public func apply(_ settings: Configuration.EscalationSettings) {
        self.settings = settings
    }

    public func enqueue(_ notice: Notice) {
        guard settings.command != nil else { return }
        guard queue.count < queueLimit else {
            logger.warning(
                "escalation command queue is full (\(queueLimit)); not announcing order \(notice.orderID)",
                [.orderID: notice.orderID, .reason: ReasonCode.escalationQueueFull.rawValue])
            return
        }
        queue.append(notice)
        if !running {
            running = true
            Task { await self.drain() }
        }
    }

    /// Waits until every queued command has run (for tests and shutdown).
    public func waitUntilIdle() async {
        guard running else { return }
        await withCheckedContinuation { idleWaiters.append($0) }
    }

    private func drain() async {
        while !queue.isEmpty {
            let notice = queue.removeFirst()
            guard let command = settings.command else { continue }
            let spacing = Duration.seconds(1 / settings.commandRate)
            if let lastStart, clock.instant() - lastStart < spacing {
                try? await clock.sleep(until: lastStart + spacing)
            }
            lastStart = clock.instant()
            let result = await CommandRunner.run(command, environment: notice.environment, timeout: settings.timeout)
            commandsRun += 1
            let outcome = result.outcome
            if outcome.succeeded {
                logger.debug("escalation command for order \(notice.orderID) \(outcome)", [.orderID: notice.orderID])
            } else {
                commandsFailed += 1
                let what = outcome == .timedOut
                    ? "timed out after \(TimeSpan.format(settings.timeout)); its process group \(result.processGroup) was killed"
                    : outcome.description
                let tail = result.firstErrorLine.map { ": \($0)" } ?? ""
                logger.warning(
                    "escalation command for order \(notice.orderID) \(what)\(tail)",
                    [.orderID: notice.orderID, .reason: ReasonCode.escalationCommandFailed.rawValue])
            }
            if result.leftRunning {
                logger.notice(
                    "escalation command for order \(notice.orderID) left processes running in the background (process group \(result.processGroup)); the next command does not wait for them",
                    [.orderID: notice.orderID, .reason: ReasonCode.escalationCommandBackground.rawValue])
            }
        }
        running = false
        for waiter in idleWaiters { waiter.resume() }
        idleWaiters.removeAll()
    }
}
