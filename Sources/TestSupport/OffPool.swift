import Foundation

/// Runs blocking work (socket reads, `waitpid`) on a thread of its own, so that it does not
/// occupy one of the few threads of Swift's cooperative pool while code under test needs them.
///
/// Expectations belong outside `body`: return what it saw and check that.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do {
                continuation.resume(returning: try body())
            } catch {
                continuation.resume(throwing: error)
            }
        }
        thread.start()
    }
}
