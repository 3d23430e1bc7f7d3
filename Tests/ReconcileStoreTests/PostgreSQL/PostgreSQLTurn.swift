import Dispatch
import Testing

/// Runs the test cases it is applied to one at a time, across every suite that has it, on a
/// thread of their own (a task executor preference), waiting for a turn without holding a thread.
///
/// The store calls of a PostgreSQL test block the thread they run on while the server answers:
/// on Swift's cooperative pool (two threads on a two-core machine) they would starve the
/// timing-sensitive tests of the other suites that run meanwhile. Off the pool and one at a
/// time, they take nothing from them but a little CPU.
struct PostgreSQLTurn: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    /// Each test case gets its turn (not the suite as a whole, nor a test around its cases).
    func scopeProvider(for test: Test, testCase: Test.Case?) -> PostgreSQLTurn? {
        testCase == nil ? nil : self
    }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await Self.turns.acquire()
        do {
            try await withTaskExecutorPreference(Self.executor) { try await function() }
        } catch {
            await Self.turns.release()
            throw error
        }
        await Self.turns.release()
    }

    private static let turns = Turns()
    private static let executor = Executor()

    /// Runs jobs on a dispatch queue of its own, whose thread is not one of the cooperative pool's.
    private final class Executor: TaskExecutor {
        private let queue = DispatchQueue(label: "reconcile.postgresql-tests")

        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            let executor = asUnownedTaskExecutor()
            queue.async { job.runSynchronously(on: executor) }
        }
    }

    /// Who has the turn, and who waits for it (first come, first served).
    private actor Turns {
        private var taken = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func acquire() async {
            guard taken else {
                taken = true
                return
            }
            await withCheckedContinuation { waiting.append($0) }
        }

        func release() {
            if waiting.isEmpty {
                taken = false
            } else {
                waiting.removeFirst().resume()
            }
        }
    }
}

extension Trait where Self == PostgreSQLTurn {
    /// One PostgreSQL test case at a time (see ``PostgreSQLTurn``).
    static var postgreSQLTurn: Self { Self() }
}
