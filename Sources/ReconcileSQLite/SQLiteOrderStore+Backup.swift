import ReconcileStore
import Foundation
import ReconcileCore

extension SQLiteOrderStore {
    /// A consistent copy of the store at `path` (`VACUUM INTO`), safe while the daemon writes.
    /// The copy gives freed pages back (`auto_vacuum=INCREMENTAL`), whatever the store does.
    public func backup(to path: String, progress: @escaping () -> Void = {}) throws {
        try withConnection { connection in
            // Setting it on a store that has it already would write (and `reconcilectl backup`
            // reads through a read-only connection).
            if try connection.scalar("PRAGMA auto_vacuum") == 0 { try connection.execute("PRAGMA auto_vacuum = INCREMENTAL") }
            try connection.withProgress(progress) { try connection.run("VACUUM INTO ?", [.text(path)]) }
        }
    }
}
