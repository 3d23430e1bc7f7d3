import Synchronization

/// A latch tasks wait at until a test opens it: what a fake server holds a request with, so
/// that a test decides when it is answered instead of sleeping for a while.
public final class AsyncLatch: Sendable {
    private struct State {
        var isOpen: Bool
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Mutex<State>

    public init(open: Bool = false) {
        state = Mutex(State(isOpen: open))
    }

    /// Returns once the latch is open (at once if it is).
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if state.isOpen { return true }
                state.waiting.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }

    /// Opens the latch: every task waiting goes on, and so will every later one.
    public func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }
}
