import Foundation

/// What a store shared by several daemons adds to ``OrderStore`` (DESIGN §7, "Shared store"):
/// nodes that heart-beat, leases that expire and are rescued by any node, lease renewal for long
/// attempts, and wake-ups between nodes. The scheduler calls these from its own loop.
///
/// Times here are the database's: the store reads its server's clock for leases and heartbeats,
/// so that hosts whose clocks disagree still agree on when a lease ends.
public protocol SharedOrderStore: OrderStore {
    /// This daemon's node name (`[Daemon] Node=`).
    var node: String { get }

    /// The lease owner for this start of the node: the node name, `/`, and a part unique to the
    /// start, so that a completion of an earlier start is never taken for this one's.
    var leaseOwner: String { get }

    /// Records this node as alive (and what it is doing), and reads the cluster: how many nodes
    /// are live (heart-beat within `liveWithin`), the database's clock, and the earliest lease of
    /// another node still held (when it may need rescuing).
    func heartbeat(_ report: NodeReport, liveWithin: Duration) throws -> ClusterView

    /// Gives back orders whose lease expired (their node died or was cut off), as
    /// ``LeaseRules/end(_:_:now:lookups:)`` with `.expired`: the attempt counts, the order is due
    /// again with the same Idempotency-Key. Each order is re-read under a row lock and rescued
    /// only if its lease is still the expired one: a completion that won the race is never
    /// overwritten.
    ///
    /// - Returns: the ids of the orders rescued, and whose leases they were.
    func rescueExpiredLeases(limit: Int) throws -> [RescuedLease]

    /// Extends the leases this start holds on `references` to `length` from the database's
    /// clock; a lease already expired or taken is left alone.
    ///
    /// - Returns: the references whose leases were renewed; the others are no longer this
    /// start's (expired, rescued or taken) and must not be sent.
    func renewLeases(_ references: [Int64], length: Duration) throws -> Set<Int64>

    /// Every node the store knows, most recent heartbeat first; live when its last heartbeat
    /// is within `liveWithin` and it has not stopped.
    func nodes(liveWithin: Duration) throws -> [NodeStatus]

    /// Marks this node stopped (a clean stop), so that the others take its share at once.
    func leave() throws

    /// Wakes every node listening (after operator actions made orders due).
    func notifyNodes() throws
}

/// What a node says of itself with each heartbeat.
public struct NodeReport: Sendable, Hashable {
    public var inFlight: Int
    /// `endpoint=state` per circuit, as `reconcilectl status` shows them.
    public var circuits: [String: String]
    /// When this start of the node began.
    public var startedAt: Date
    public var version: String

    public init(inFlight: Int, circuits: [String: String], startedAt: Date, version: String) {
        self.inFlight = inFlight
        self.circuits = circuits
        self.startedAt = startedAt
        self.version = version
    }
}

/// What a heartbeat read of the cluster.
public struct ClusterView: Sendable, Hashable {
    /// Live nodes, this one included (at least 1).
    public var liveNodes: Int
    /// The database's clock when the heartbeat was written.
    public var databaseNow: Date
    /// Whether this node's previous heartbeat was recent enough to count it live: `false` at the
    /// first heartbeat of a start and after the node was cut off for longer than the window.
    public var wasLive: Bool
    /// The earliest end of a lease held by another node (or an earlier start of this one), on
    /// the database's clock; `nil` when none is held.
    public var nextForeignLeaseEnd: Date?

    public init(liveNodes: Int, databaseNow: Date, wasLive: Bool, nextForeignLeaseEnd: Date?) {
        self.liveNodes = liveNodes
        self.databaseNow = databaseNow
        self.wasLive = wasLive
        self.nextForeignLeaseEnd = nextForeignLeaseEnd
    }
}

/// An order a rescue gave back.
public struct RescuedLease: Sendable, Hashable {
    public var orderID: String
    /// The lease owner whose lease expired.
    public var owner: String
    /// When that lease ended (the database's clock).
    public var leasedUntil: Date

    public init(orderID: String, owner: String, leasedUntil: Date) {
        self.orderID = orderID
        self.owner = owner
        self.leasedUntil = leasedUntil
    }
}

/// One node as `reconcilectl status` lists it.
public struct NodeStatus: Sendable, Hashable {
    public var name: String
    public var lastHeartbeat: Date
    /// Whether its heartbeat is recent enough to count it live.
    public var live: Bool
    public var inFlight: Int
    public var circuits: [String: String]
    public var startedAt: Date?
    public var version: String?
    /// Orders it holds leases on now.
    public var leases: Int

    public init(
        name: String, lastHeartbeat: Date, live: Bool, inFlight: Int, circuits: [String: String], startedAt: Date?, version: String?,
        leases: Int
    ) {
        self.name = name
        self.lastHeartbeat = lastHeartbeat
        self.live = live
        self.inFlight = inFlight
        self.circuits = circuits
        self.startedAt = startedAt
        self.version = version
        self.leases = leases
    }
}
