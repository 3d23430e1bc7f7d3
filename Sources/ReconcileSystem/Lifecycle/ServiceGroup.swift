import ReconcileCore
import Synchronization
import ReconcileFoundation

/// Runs the daemon's long-running parts under one task group (after swift-service-lifecycle's
/// `ServiceGroup`): started in order, stopped in reverse order — each one's `run()` has ended
/// before the next is asked to stop — when ``shutdown()`` is called. A part that ends or throws
/// while nobody asked it to stops the others the same way and makes ``run()`` throw, so that the
/// daemon exits non-zero and systemd restarts it, instead of running on half-alive.
public final class ServiceGroup: Sendable {
    /// Why ``run()`` ended other than by ``shutdown()``.
    public struct UnexpectedEnd: Error, Sendable, CustomStringConvertible {
        /// The part that ended first.
        public var service: String
        /// What it threw; `nil` when it returned.
        public var error: String?

        public var description: String {
            error.map { "\(service) failed: \($0)" } ?? "\(service) ended unexpectedly"
        }
    }

    private let services: [any Service]
    private let logger: Logger
    private let state = Mutex(State())
    private let shutdownRequests: AsyncStream<Void>.Continuation
    private let shutdownStream: AsyncStream<Void>

    private struct State {
        var started = false
        var shuttingDown = false
    }

    /// - Parameter services: in start order.
    public init(_ services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
        (shutdownStream, shutdownRequests) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks every part to stop, last started first. Returns at once; ``run()`` returns when the
    /// last part has ended.
    public func shutdown() {
        shutdownRequests.yield()
    }

    /// Runs the parts until ``shutdown()`` (then returns) or until one ends on its own (then
    /// stops the others and throws ``UnexpectedEnd``).
    public func run() async throws(UnexpectedEnd) {
        precondition(state.withLock { state in defer { state.started = true }; return !state.started }, "a ServiceGroup runs once")
        enum Event: Sendable {
            case ended(index: Int, error: String?)
            case shutdownRequested
        }
        let failure: UnexpectedEnd? = await withTaskGroup(of: Event.self) { group in
            for (index, service) in services.enumerated() {
                group.addTask {
                    do {
                        try await service.run()
                        return .ended(index: index, error: nil)
                    } catch {
                        return .ended(index: index, error: "\(error)")
                    }
                }
            }
            group.addTask { [shutdownStream] in
                for await _ in shutdownStream { return .shutdownRequested }
                return .shutdownRequested
            }

            var ended: [Int: String?] = [:]
            var failure: UnexpectedEnd?
            // Until the first part ends or a shutdown is asked for.
            if let first = await group.next() {
                switch first {
                case .shutdownRequested:
                    break
                case .ended(let index, let error):
                    ended[index] = error
                    failure = UnexpectedEnd(service: services[index].name, error: error)
                    logger.critical(
                        "\(failure!.description); stopping the daemon so that it is restarted", [.reason: ReasonCode.serviceFailed.rawValue])
                }
            }
            state.withLock { $0.shuttingDown = true }
            shutdownRequests.finish()

            // Last started, first stopped; each one's run() ends before the next is asked.
            for index in services.indices.reversed() where ended[index] == nil {
                await services[index].stop()
                while ended[index] == nil, let event = await group.next() {
                    guard case .ended(let other, let error) = event else { continue }
                    ended[other] = error
                    // The daemon is stopping anyway: said, but no reason to fail the stop.
                    if other != index {
                        logger.warning("\(services[other].name) ended before it was asked to stop\(error.map { ": \($0)" } ?? "")")
                    } else if let error {
                        logger.warning("\(services[index].name) failed while stopping: \(error)")
                    }
                }
            }
            group.cancelAll()
            return failure
        }
        if let failure { throw failure }
    }
}
