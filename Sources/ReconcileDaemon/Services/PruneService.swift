import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileSystem
import Synchronization

/// `KeepFinished=` (DESIGN §7): prunes finished and cancelled orders' receipts at start-up, once a
/// day after, and again when a reload changes the setting.
final class PruneService: Service {
    let name = "pruning"
    private let store: any OrderStore & SerializedStore
    private let logger: Logger
    private let keep: Mutex<Duration?>
    private let clock: any DaemonClock
    private let wake: WakeSignal
    private let stopped = Atomic<Bool>(false)

    init(store: any OrderStore & SerializedStore, keepFinished: Duration?, logger: Logger, clock: any DaemonClock) {
        self.clock = clock
        self.wake = WakeSignal(clock: clock)
        self.store = store
        self.logger = logger
        self.keep = Mutex(keepFinished)
    }

    func run() async throws {
        while !stopped.load(ordering: .acquiring) {
            if let keep = keep.withLock({ $0 }) { await prune(keep) }
            await wake.wait(until: clock.instant() + .seconds(86_400))
        }
    }

    func stop() async {
        stopped.store(true, ordering: .releasing)
        wake.signal()
    }

    /// A reload's `KeepFinished=`: applied (and pruned by) at once.
    func apply(keepFinished: Duration?) {
        keep.withLock { $0 = keepFinished }
        wake.signal()
    }

    private func prune(_ keep: Duration) async {
        let now = clock.now()
        do {
            let pruned = try await store.writing { [store] in try store.pruneFinished(before: now.addingTimeInterval(-keep.inSeconds), now: now) }
            if pruned > 0 {
                logger.info(
                    "pruned receipts and raw files of \(Plural.count(pruned, "order")) finished more than \(TimeSpan.format(keep)) ago",
                    [.count: String(pruned)])
            }
        } catch {
            logger.warning("cannot prune finished orders: \(error)", [.reason: ReasonCode.storeFailure(StoreFailure.of(error)).rawValue])
        }
    }
}
