import ReconcileFoundation
import ReconcileStore
import Foundation
import Glibc
import ReconcileCore

/// The shared store's coordination (DESIGN §7): nodes and their heartbeats, the rescue of
/// expired leases, lease renewal, and wake-ups by `NOTIFY`.
extension PostgreSQLOrderStore {
    // MARK: - Nodes

    public func heartbeat(_ report: NodeReport, liveWithin window: Duration) throws -> ClusterView {
        try write { connection in
            let now = try Self.databaseClock(connection)
            let since = now.addingTimeInterval(-window.inSeconds)
            let previous = try connection.queryFirst(
                "SELECT lease_owner, last_heartbeat, stopped_at IS NOT NULL FROM nodes WHERE name = $1 FOR UPDATE", [.text(node)]
            ) { (owner: $0.string(0), at: Date(epochMilliseconds: $0.int64(1)), stopped: $0.bool(2)) }
            let wasLive = previous.map { $0.owner == leaseOwner && !$0.stopped && $0.at >= since } ?? false
            let circuits = report.circuits.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            try connection.run(
                """
                INSERT INTO nodes (name, lease_owner, started_at, last_heartbeat, stopped_at, in_flight, circuits, version)
                VALUES ($1, $2, $3, $4, NULL, $5, $6, $7)
                ON CONFLICT (name) DO UPDATE SET lease_owner = $2, started_at = $3, last_heartbeat = $4, stopped_at = NULL,
                    in_flight = $5, circuits = $6, version = $7
                """,
                [
                    .text(node), .text(leaseOwner), .integer(report.startedAt.epochMilliseconds), .integer(now.epochMilliseconds),
                    .integer(Int64(report.inFlight)), .text(circuits), .text(report.version),
                ])
            let live = try connection.scalar(
                "SELECT count(*) FROM nodes WHERE stopped_at IS NULL AND last_heartbeat >= $1", [.integer(since.epochMilliseconds)]) ?? 1
            // Orders' and outbox actions' leases: a dead node's acknowledgements are rescued too.
            let nextLeaseEnd = try connection.scalar(
                """
                SELECT min(until) FROM (
                    SELECT min(leased_until) AS until FROM orders WHERE lease_owner IS NOT NULL AND lease_owner <> $1
                    UNION ALL
                    SELECT min(leased_until) FROM outbox WHERE lease_owner IS NOT NULL AND lease_owner <> $1 AND state = 'pending'
                ) AS leases
                """, [.text(leaseOwner)])
            return ClusterView(
                liveNodes: max(1, Int(live)), databaseNow: now, wasLive: wasLive, nextForeignLeaseEnd: nextLeaseEnd.map(Date.init(epochMilliseconds:)))
        }
    }

    /// Another daemon running under this node's name, or `nil` (DESIGN §7). The node's row tells:
    /// not stopped, with another lease owner, its last heartbeat within `2 × heartbeatInterval`
    /// and 1 s. That is also how an earlier start of this very daemon looks when it crashed a
    /// moment ago, so the row must show life: its owner's process on this host gone means the
    /// crashed earlier start (at once); otherwise it must heart-beat again within that time,
    /// waited for with `sleep` (at most 11 s), or it is taken for dead.
    public func liveNamesake(
        heartbeatInterval: Duration, sleep: (Duration) -> Void = { Thread.sleep(forTimeInterval: $0.inSeconds) }
    ) throws -> PostgreSQLNodeNamesake? {
        let patience = heartbeatInterval * 2 + .seconds(1)
        func read() throws -> (owner: String, beat: Int64, age: Duration)? {
            try withConnection { connection in
                let now = try Self.databaseClock(connection)
                return try connection.queryFirst(
                    "SELECT lease_owner, last_heartbeat FROM nodes WHERE name = $1 AND stopped_at IS NULL AND lease_owner <> $2",
                    [.text(node), .text(leaseOwner)]
                ) { row in
                    (row.string(0), row.int64(1), Duration.milliseconds(now.epochMilliseconds - row.int64(1)))
                }
            }
        }
        guard let first = try read(), first.age <= patience else { return nil }
        let origin = PostgreSQLNodeNamesake.origin(ofLeaseOwner: first.owner)
        if let origin, origin.host == PostgreSQLNodeNamesake.origin(ofLeaseOwner: leaseOwner)?.host, kill(origin.processID, 0) != 0, errno == ESRCH {
            return nil
        }
        // Seen again, heart-beaten since: alive.
        sleep(patience - max(.zero, first.age))
        guard let second = try read(), second.owner == first.owner, second.beat > first.beat else { return nil }
        return PostgreSQLNodeNamesake(node: node, host: origin?.host, processID: origin?.processID, heartbeatAge: max(.zero, first.age))
    }

    /// Marks this node stopped (a clean stop): the others take its share at their next
    /// heartbeat instead of after the window.
    public func leave() throws {
        try write { connection in
            let now = try Self.databaseClock(connection)
            try connection.run(
                "UPDATE nodes SET stopped_at = $1, in_flight = 0 WHERE name = $2 AND lease_owner = $3",
                [.integer(now.epochMilliseconds), .text(node), .text(leaseOwner)])
        }
    }

    public func nodes(liveWithin window: Duration) throws -> [NodeStatus] {
        try withConnection { connection in
            try connection.transaction {
                let now = try Self.databaseClock(connection)
                let leases = Dictionary(
                    try connection.query(
                        "SELECT split_part(lease_owner, '/', 1), count(*) FROM orders WHERE lease_owner IS NOT NULL GROUP BY 1"
                    ) { ($0.string(0), $0.int(1)) }, uniquingKeysWith: +)
                return try connection.query(
                    """
                    SELECT name, last_heartbeat, stopped_at, in_flight, circuits, started_at, version FROM nodes
                    ORDER BY last_heartbeat DESC, name
                    """
                ) { row in
                    let name = row.string(0)
                    let last = Date(epochMilliseconds: row.int64(1))
                    var circuits: [String: String] = [:]
                    for pair in row.string(4).split(separator: " ") {
                        let parts = pair.split(separator: "=", maxSplits: 1)
                        if parts.count == 2 { circuits[String(parts[0])] = String(parts[1]) }
                    }
                    let stopped = row.optionalInt64(2) != nil
                    return NodeStatus(
                        name: name, lastHeartbeat: last, live: !stopped && now.timeIntervalSince(last) <= window.inSeconds,
                        inFlight: stopped ? 0 : row.int(3), circuits: circuits, startedAt: Date(epochMilliseconds: row.int64(5)),
                        version: row.string(6), leases: leases[name] ?? 0)
                }
            }
        }
    }

    // MARK: - Leases

    public func rescueExpiredLeases(limit: Int) throws -> [RescuedLease] {
        try write { connection in
            let now = try Self.databaseClock(connection)
            // Locked with the condition: a row a completion changed since this statement began
            // is re-read and re-checked before it is locked (READ COMMITTED's re-check), and a
            // row being completed right now is skipped, not waited for.
            let transaction = StoreTransaction(connection)
            let expired = try transaction.records(
                """
                \(OrderColumns.select())
                WHERE o.lease_owner IS NOT NULL AND o.leased_until < \(now)
                ORDER BY o.leased_until
                LIMIT \(limit)
                FOR UPDATE OF o SKIP LOCKED
                """)
            var rescued: [RescuedLease] = []
            for record in expired {
                // Under the row lock, the row as it is now: rescued only while its lease is still
                // the expired one (River #1302: a rescue must never overwrite a completion).
                guard let lease = record.lease, let until = lease.until, until < now else { continue }
                _ = try transaction.planAndWrite("rescue of order \(record.orderID)") {
                    (try LeaseRules.end(record, .expired, now: now, lookups: transaction), ())
                }
                rescued.append(RescuedLease(orderID: record.orderID, owner: lease.owner, leasedUntil: until))
            }
            // Outbox actions whose sender's lease ended: due again now (sent at least once; the
            // Idempotency-Key is the action's, unchanged). Re-checked under the row lock, as above.
            let expiredActions = try transaction.actions(
                """
                SELECT \(raw: OutboxColumns.action) \(raw: OutboxColumns.from)
                WHERE x.lease_owner IS NOT NULL AND x.leased_until < \(now) AND x.state = 'pending'
                ORDER BY x.leased_until
                LIMIT \(limit)
                FOR UPDATE OF x SKIP LOCKED
                """)
            var actionsRescued = 0
            for action in expiredActions {
                guard let until = action.lease?.until, until < now else { continue }
                try transaction.update(OutboxRules.release(action, now: now))
                actionsRescued += 1
            }
            if !rescued.isEmpty || actionsRescued > 0 { try Self.notify(connection) }
            return rescued
        }
    }

    public func renewLeases(_ references: [Int64], length: Duration) throws -> Set<Int64> {
        guard !references.isEmpty else { return [] }
        return try write { connection in
            let now = try Self.databaseClock(connection)
            return Set(try connection.query(
                """
                UPDATE orders SET leased_until = $1
                WHERE id = ANY($2::bigint[]) AND lease_owner = $3 AND leased_until >= $4
                RETURNING id
                """,
                [
                    .integer(now.addingTimeInterval(length.inSeconds).epochMilliseconds), .integerArray(references.sorted()),
                    .text(leaseOwner), .integer(now.epochMilliseconds),
                ]) { $0.int64(0) })
        }
    }

    // MARK: - Wake-ups

    public func notifyNodes() throws {
        try withConnection { connection in try Self.notify(connection) }
    }

    /// `NOTIFY reconcile` (sent when the caller's transaction commits, at once outside one).
    /// Held back with the transaction's writes: nothing waits for its answer.
    static func notify(_ connection: PostgreSQLConnection) throws {
        try connection.sendLater("SELECT pg_notify($1, '')", [.text(channel)])
    }
}
