import ReconcileStore
import Foundation

/// Another daemon running under this daemon's node name (`[Daemon] Node=`): seen heart-beating
/// in the shared store under a lease owner not this start's. Two daemons under one name would
/// each take the whole cluster's share of the limits and release each other's leases.
public struct PostgreSQLNodeNamesake: Sendable, Hashable, CustomStringConvertible {
    public var node: String
    /// The host it runs on, as its lease owner says (`nil` from a daemon too old to say).
    public var host: String?
    public var processID: Int32?
    /// How long ago its last heartbeat was, when first seen.
    public var heartbeatAge: Duration

    public var description: String {
        let seconds = Double(heartbeatAge.components.seconds) + Double(heartbeatAge.components.attoseconds) / 1e18
        let place = host.map { "on host \($0)" + (processID.map { " (process \($0))" } ?? "") } ?? "on another host"
        return "another reconciled runs as node \(node) \(place): its last heartbeat was \(String(format: "%.1f", seconds)) s ago, "
            + "and it heart-beat again since; give each daemon its own [Daemon] Node="
    }

    /// The host and process of a lease owner `node/random@host:pid` (this version's form).
    static func origin(ofLeaseOwner owner: String) -> (host: String, processID: Int32)? {
        guard let slash = owner.firstIndex(of: "/") else { return nil }
        let instance = owner[owner.index(after: slash)...]
        guard let at = instance.lastIndex(of: "@") else { return nil }
        let origin = instance[instance.index(after: at)...]
        guard let colon = origin.lastIndex(of: ":"), let pid = Int32(origin[origin.index(after: colon)...]) else { return nil }
        let host = String(origin[..<colon])
        return host.isEmpty ? nil : (host, pid)
    }
}
