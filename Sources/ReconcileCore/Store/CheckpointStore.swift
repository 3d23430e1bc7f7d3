import Foundation

/// Where the daemon's pulling of a store's notifications got to (DESIGN §5a): one time per name
/// (`appstore.production`, `appstore.sandbox`), kept across restarts.
public protocol CheckpointStore: Sendable {
    /// The checkpoint called `name`, or `nil` when none was written yet.
    func checkpoint(_ name: String) throws -> Date?

    /// Moves the checkpoint called `name` to `value` (milliseconds kept), creating it if needed;
    /// it never moves back (several nodes polling a shared store may finish out of order). One
    /// transaction.
    func advanceCheckpoint(_ name: String, to value: Date, now: Date) throws

    /// Takes the turn called `name` until `until`, if nobody holds it at `now` (nodes sharing a
    /// store poll one at a time: the one that takes the turn polls, the others skip). One
    /// transaction. - Returns: whether this caller took it.
    func takeTurn(_ name: String, until: Date, now: Date) throws -> Bool
}
