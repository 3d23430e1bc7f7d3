import Foundation
import ReconcileCore

/// The scheduler's slots: which `MaxInFlight=` each piece of work counts against, this node's
/// share of it, and the work leased ahead of a free slot.
extension Scheduler {
    /// Which `MaxInFlight=` an attempt counts against: `[Verifier]`'s, or `[GooglePlay]`'s for
    /// Google Play orders and outbox actions verified there.
    enum Pool: Hashable {
        case main
        case googlePlay
    }

    /// Work leased ahead: an order and what to verify it with, or an outbox action and its sender.
    struct ReadyItem {
        enum Work {
            case order(ClaimedOrder, any OrderVerifier)
            case action(ClaimedAction, any OutboxSender)
        }

        var work: Work
        var endpoint: VerificationEndpoint
        var pool: Pool

        var orderID: String {
            switch work {
            case .order(let order, _): order.orderID
            case .action(let action, _): action.action.orderID
            }
        }

        /// The order's lease, for work that holds one (an outbox action's is its own).
        var orderReference: Int64? {
            if case .order(let order, _) = work { order.reference } else { nil }
        }

        /// For log lines: `order A1` or `play_acknowledge of order A1`.
        var what: String {
            switch work {
            case .order(let order, _): "order \(order.orderID)"
            case .action(let action, _): "\(action.action.kind.rawValue) of order \(action.action.orderID)"
            }
        }
    }

    /// The most attempts of `pool` this node may have in flight at once: its `MaxInFlight=`, or
    /// this node's share of it when several nodes share the store.
    func maxInFlight(_ pool: Pool) -> Int {
        let configured =
            switch pool {
            case .main: settings.main.maxInFlight
            case .googlePlay: settings.googlePlay?.maxInFlight ?? settings.main.maxInFlight
            }
        return EndpointAdmission.Limits.sharedInFlight(configured, share: coordinator.share)
    }

    /// How many orders of `pool` may wait leased for a slot: enough to refill the slots that
    /// free up between two turns (``Settings/turnSpacing``) at `MaxInFlight=` requests of 50 ms.
    func readyLimit(_ pool: Pool) -> Int { min(16, max(1, maxInFlight(pool) / 4)) }

    /// ``Settings/turnSpacing``'s default.
    public static let defaultTurnSpacing: Duration = .milliseconds(4)

    /// Slots of `pool` free now: room in flight and in the queue of work leased ahead.
    func freeSlots(_ pool: Pool) -> Int {
        maxInFlight(pool) - inFlightByPool[pool, default: 0] + readyLimit(pool) - ready.count(where: { $0.pool == pool })
    }

    /// The pool orders of `kind` count against.
    func pool(for kind: WorkKind) -> Pool {
        kind == .verifyPlay && settings.googlePlay != nil ? .googlePlay : .main
    }
}
