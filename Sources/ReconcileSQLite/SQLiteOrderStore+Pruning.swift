import ReconcileStore
import Foundation
import ReconcileCore

/// `KeepFinished=` (DESIGN §7): receipts and raw files of old finished orders dropped, and the
/// pages they held given back to the file system.
extension SQLiteOrderStore {
    public func pruneFinished(before cutoff: Date, now: Date) throws -> Int {
        // In batches, so that a large prune never holds the write lock for long.
        var total = 0
        while true {
            let pruned = try write { connection in
                try StoreTransaction(connection).pruneFinished(before: cutoff, now: now, limit: 500)
            }
            total += pruned
            if pruned < 500 { break }
        }
        try releaseFreePages()
        return total
    }

    /// Gives the pages pruning freed back to the filesystem, a few megabytes per transaction
    /// (`PRAGMA incremental_vacuum`), so that the file shrinks without ever holding the store
    /// for long. Only stores created with `auto_vacuum=INCREMENTAL` (new ones, and copies made
    /// by `backup` or `restore`) can; for others it does nothing (docs/operating.md, "The store").
    ///
    /// - Returns: how many pages were released.
    @discardableResult
    public func releaseFreePages(pagesPerStep: Int = 2048) throws -> Int {
        var released = 0
        while true {
            let step = try write { connection -> Int in
                guard try connection.scalar("PRAGMA auto_vacuum") == 2 else { return 0 }
                let free = Int(try connection.scalar("PRAGMA freelist_count") ?? 0)
                guard free > 0 else { return 0 }
                try connection.run("PRAGMA incremental_vacuum(\(min(free, pagesPerStep)))")
                return min(free, pagesPerStep)
            }
            released += step
            if step < pagesPerStep { return released }
        }
    }
}
