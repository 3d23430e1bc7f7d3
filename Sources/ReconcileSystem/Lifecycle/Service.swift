/// One long-running part of the daemon (the spool ingest, the scheduler, the control socket, a
/// timer): run by a ``ServiceGroup``, which starts the parts in order and stops them in
/// reverse order.
public protocol Service: Sendable {
    /// How the daemon's log lines name it (`scheduler`, `spool ingest`).
    var name: String { get }

    /// Runs until ``stop()`` asks it to end; returning or throwing before that is a failure
    /// the group reacts to by stopping the daemon.
    func run() async throws

    /// Asks ``run()`` to end after finishing what it has in hand (an in-flight attempt, a batch
    /// of files). Called once, at most.
    func stop() async
}

/// A ``Service`` made of closures, for the daemon's small parts (a timer, a watch).
public struct ServiceClosure: Service {
    public let name: String
    private let body: @Sendable () async throws -> Void
    private let stopper: @Sendable () async -> Void

    public init(_ name: String, run body: @escaping @Sendable () async throws -> Void, stop: @escaping @Sendable () async -> Void) {
        self.name = name
        self.body = body
        self.stopper = stop
    }

    public func run() async throws { try await body() }
    public func stop() async { await stopper() }
}
