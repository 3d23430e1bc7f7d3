import Foundation
import TestSupport

/// Holds threads until `count` of them wait, then lets them all go: for tests that race several
/// store instances against each other.
final class StartingGate: @unchecked Sendable {
    // @unchecked: `waiting` is only touched under `condition`.
    private let condition = NSCondition()
    private var waiting = 0
    private let count: Int

    init(_ count: Int) {
        self.count = count
    }

    func wait() {
        condition.lock()
        defer { condition.unlock() }
        waiting += 1
        if waiting >= count {
            condition.broadcast()
        } else {
            while waiting < count { condition.wait() }
        }
    }

    /// Runs `body` on `count` threads of their own, all let go at once; returns each thread's
    /// result, in order.
    static func race<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) async throws -> [T] {
        let gate = StartingGate(count)
        return try await withThrowingTaskGroup(of: (Int, T).self) { group in
            for index in 0..<count {
                group.addTask {
                    try await offPool {
                        gate.wait()
                        return (index, try body(index))
                    }
                }
            }
            var results: [(Int, T)] = []
            for try await result in group { results.append(result) }
            return results.sorted { $0.0 < $1.0 }.map(\.1)
        }
    }
}
