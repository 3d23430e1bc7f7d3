/// Why a store operation failed, in the few kinds the daemon reacts to differently.
public enum StoreFailure: String, Sendable, Hashable {
    /// The disk (or quota) is full: wait for space.
    case diskFull = "disk_full"
    /// The database or its directory is read-only.
    case readOnly = "read_only"
    /// Another process holds the database lock past the busy timeout.
    case busy
    /// The store cannot be reached (a shared store's server is down, or the network to it):
    /// retry with backoff; nothing was written.
    case unavailable
    /// Anything else.
    case other = "store_error"

    /// The kind of `error`, if the store classified it.
    public static func of(_ error: any Error) -> StoreFailure {
        (error as? any ClassifiedStoreError)?.storeFailure ?? .other
    }
}

/// An error a store implementation can classify.
public protocol ClassifiedStoreError: Error {
    var storeFailure: StoreFailure { get }
}
