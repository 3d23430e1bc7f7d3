import Synchronization

/// A ``Service`` whose work is one async body: a loop that ends when its task is cancelled (a
/// timer, a publisher that writes its last numbers on cancellation), or that ends when told by a
/// `stop` of its own (which may still cancel it, for instance when waiting is pointless).
public final class TaskService: Service {
    public let name: String
    private let body: @Sendable () async throws -> Void
    private let stopper: (@Sendable (_ cancel: @escaping @Sendable () -> Void) async -> Void)?
    private let state = Mutex<(task: Task<Void, any Error>?, stopping: Bool)>((nil, false))

    /// - Parameters:
    ///   - stop: how to ask the body to end; it is handed a function that cancels the body's
    ///     task. Without one, stopping cancels the task.
    public init(
        _ name: String, stop: (@Sendable (_ cancel: @escaping @Sendable () -> Void) async -> Void)? = nil,
        _ body: @escaping @Sendable () async throws -> Void
    ) {
        self.name = name
        self.body = body
        self.stopper = stop
    }

    public func run() async throws {
        let task = Task(operation: body)
        // A stop that came before the task existed cancels it at once.
        let stoppedEarly = state.withLock { state in
            state.task = task
            return state.stopping
        }
        if stoppedEarly && stopper == nil { task.cancel() }
        try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    public func stop() async {
        let task = state.withLock { state in
            state.stopping = true
            return state.task
        }
        let cancel: @Sendable () -> Void = { [self] in self.state.withLock { $0.task }?.cancel() }
        if let stopper { await stopper(cancel) } else { task?.cancel() }
    }
}
