import Foundation

/// What the ingest loop reacts to.
public enum SpoolEvent: Sendable, Hashable {
    /// Names that appeared in `incoming/`.
    case arrived([SpoolFileName])
    /// Read the whole of `incoming/` again (start-up, the watch re-established, `RescanInterval=`).
    case rescan(reason: String)
    /// The kernel's inotify queue overflowed: names were missed. Logged (`notice`), then a rescan.
    case overflow
    /// `incoming/` (or the spool) was removed or replaced: recreate what is missing and rescan.
    case directoryGone
}
