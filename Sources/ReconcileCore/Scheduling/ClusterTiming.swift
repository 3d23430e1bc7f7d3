/// The times of a shared store's coordination, all derived from `[State] LeaseTime=` (DESIGN
/// §7): how often a node heart-beats (and renews its leases, and looks for expired ones), and
/// how recent a heartbeat must be for a node to count as live.
///
/// A node that stops heart-beating is counted out by every other node within one `LeaseTime`
/// (the window plus one interval), and its leases are rescued when they end, at most one
/// `LeaseTime` after its last renewal.
public struct ClusterTiming: Sendable, Hashable {
    public var leaseTime: Duration

    public init(leaseTime: Duration) {
        self.leaseTime = leaseTime
    }

    /// An eighth of `LeaseTime`, between 0.5 s and 5 s: heartbeat, lease renewal and the rescue
    /// look-out run this often (and a rescue also when another node's lease is due to end).
    public var heartbeatInterval: Duration {
        min(.seconds(5), max(.milliseconds(500), leaseTime / 8))
    }

    /// A node is live while its last heartbeat is this recent: `LeaseTime` less one interval.
    public var liveWindow: Duration { leaseTime - heartbeatInterval }

    /// The share of `MaxRate`, `Burst` and `MaxInFlight` one of `liveNodes` nodes takes.
    public static func share(liveNodes: Int) -> Double {
        1 / Double(max(1, liveNodes))
    }
}
