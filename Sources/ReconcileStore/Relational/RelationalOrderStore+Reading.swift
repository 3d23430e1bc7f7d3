import Foundation
import ReconcileCore
import ReconcileFoundation

/// What `reconcilectl` and the daemon's reports read: one order, its history, counts, the
/// summary and the listing.
extension RelationalOrderStore {
    public func order(id orderID: String) throws -> StoredOrder? {
        try withConnection { connection in
            try connection.fetchOne(
                "\(OrderColumns.select()) WHERE o.order_id = \(orderID)") { try OrderColumns.record(from: $0).storedOrder }
        }
    }

    public func samePurchaseOrders(as orderID: String) throws -> [String] {
        try withConnection { connection in
            try connection.fetchAll(
                """
                SELECT o.order_id FROM transitions t \(.indexedBy("transitions_same_purchase")) JOIN orders o ON o.id = t.order_ref
                WHERE t.reason = 'same_purchase_as' AND t.detail = \(orderID) ORDER BY t.id
                """
            ) { $0.string(0) }
        }
    }

    public func history(orderID: String) throws -> [TransitionRecord] {
        try withConnection { connection in
            try connection.fetchAll(
                """
                SELECT t.at, t.actor, t.from_state, t.to_state, t.reason, t.detail,
                       a.verifier_status, a.http_status, a.environment, a.endpoint, a.latency_ms
                FROM transitions t
                JOIN orders o ON o.id = t.order_ref
                LEFT JOIN attempts a ON a.id = t.attempt_ref
                WHERE o.order_id = \(orderID)
                ORDER BY t.id
                """
            ) { row in
                let actor = row.string(1)
                guard let parsedActor = TransitionActor(actor) else {
                    throw StoreError.unknownValue(table: "transitions", column: "actor", value: actor)
                }
                let fromState = try row.optionalKnown(at: 2, as: OrderState.self, table: "transitions", column: "from_state")
                let toState = try row.known(at: 3, as: OrderState.self, table: "transitions", column: "to_state")
                return TransitionRecord(
                    at: Date(epochMilliseconds: row.int64(0)), actor: parsedActor, from: fromState, to: toState,
                    reason: ReasonCode(rawValue: row.string(4)), detail: row.optionalString(5),
                    verifierStatus: row.optionalInt64(6).map(Int.init), httpStatus: row.optionalInt64(7).map(Int.init),
                    environment: row.optionalString(8), endpoint: row.optionalString(9),
                    latencyMilliseconds: row.optionalInt64(10).map(Int.init))
            }
        }
    }

    /// Orders per state from rows of `state, count(*)`; a state this version does not know is
    /// an error.
    package static func counts(_ connection: Connection, _ statement: SQLStatement) throws -> [OrderState: Int] {
        let pairs = try connection.fetchAll(statement) { row in
            (try row.known(at: 0, as: OrderState.self, table: "orders", column: "state"), row.int(1))
        }
        return Dictionary(pairs, uniquingKeysWith: +)
    }

    /// Orders per state: a scan of the covering index `orders_state_received`, never of the table.
    package static var countsStatement: SQLStatement { "SELECT state, count(*) FROM orders GROUP BY state" }

    public func countsByState() throws -> [OrderState: Int] {
        try withConnection { connection in try Self.counts(connection, Self.countsStatement) }
    }

    /// Counts of the orders in `states` only: a range of the `(state, received_at)` index, so
    /// that a store of a million finished orders costs nothing here (the `STATUS=` line).
    public func countsByState(in states: [OrderState]) throws -> [OrderState: Int] {
        guard !states.isEmpty else { return [:] }
        return try withReader { connection in
            try Self.counts(connection, Self.countsStatement(states))
        }
    }

    /// Counts of some states.
    package static func countsStatement(_ states: [OrderState]) -> SQLStatement {
        "SELECT state, count(*) FROM orders WHERE state \(in: states.map(\.rawValue)) GROUP BY state"
    }

    /// The earliest next attempt of an order of `kind`: one step into its partial due index.
    package static func nextDue(_ kind: WorkKind) -> SQLStatement {
        """
        SELECT next_attempt_at FROM orders \(.indexedBy(DueOrders.index(kind)))
        WHERE next_attempt_at IS NOT NULL AND \(raw: DueOrders.condition(kind))
        ORDER BY next_attempt_at LIMIT 1
        """
    }

    public func nextDueTime(_ kind: WorkKind) throws -> Date? {
        try withConnection { connection in try connection.fetchOne(Self.nextDue(kind)) { Date(epochMilliseconds: $0.int64(0)) } }
    }

    /// The earliest next attempt of any kind.
    public func nextDueTime() throws -> Date? {
        try WorkKind.allCases.compactMap { try nextDueTime($0) }.min()
    }

    public func oldestWaitingReceivedAt() throws -> Date? {
        try withConnection { connection in
            try connection.fetchOne("SELECT received_at FROM orders WHERE state = 'waiting' ORDER BY received_at LIMIT 1") {
                Date(epochMilliseconds: $0.int64(0))
            }
        }
    }

    /// The earliest `received_at` of one state: one step into `orders_state_received`.
    package static func oldestReceived(_ state: String) -> SQLStatement {
        "SELECT received_at FROM orders WHERE state = \(state) ORDER BY received_at LIMIT 1"
    }

    /// Counts by state, the oldest pending order, the next due time, unmatched notifications
    /// and the outbox's backlog, in one read snapshot (`reconcilectl status`, the metrics file).
    public func summary() throws -> StoreSummary {
        try readSnapshot { connection in
            let counts = try Self.counts(connection, Self.countsStatement)
            let oldest = try StoreSummary.pendingStates.compactMap { state in
                try connection.fetchOne(Self.oldestReceived(state.rawValue)) { Date(epochMilliseconds: $0.int64(0)) }
            }.min()
            let next = try WorkKind.allCases.compactMap { kind in
                try connection.fetchOne(Self.nextDue(kind)) { Date(epochMilliseconds: $0.int64(0)) }
            }.min()
            let unmatched = try connection.fetchOne("SELECT count(*) FROM notifications WHERE outcome = 'unmatched'") { $0.int(0) } ?? 0
            return StoreSummary(
                counts: counts, oldestPendingReceivedAt: oldest, nextAttemptAt: next, outbox: try Self.outboxSummary(connection),
                unmatchedNotifications: unmatched, discovered: try Self.discoverySummary(connection))
        }
    }

    /// Discovered purchases waiting and left for a person, each through its partial index.
    package static func discoverySummary(_ connection: Connection) throws -> DiscoverySummary {
        let waiting = try connection.fetchOne(
            "SELECT count(*), min(discovered_at) FROM discovered_purchases \(.indexedBy("discovered_waiting")) WHERE status = 'waiting'"
        ) { ($0.int(0), $0.optionalInt64(1).map(Date.init(epochMilliseconds:))) }
        let noAccount = try connection.fetchOne(
            "SELECT count(*) FROM discovered_purchases \(.indexedBy("discovered_no_account")) WHERE status = 'no_account'"
        ) { $0.int(0) } ?? 0
        return DiscoverySummary(waiting: waiting?.0 ?? 0, oldestWaitingDiscoveredAt: waiting?.1 ?? nil, noAccount: noAccount)
    }

    /// Orders matching `filter`, soonest next attempt first (orders without one last, oldest
    /// first), and how many match in all, in one read snapshot.
    public func shape(by grouping: QueueShape.Grouping, now: Date, verifierEndpoint: String) throws -> QueueShape {
        let key: SQLStatement =
            switch grouping {
            case .state: "o.state"
            case .product: "o.product_id"
            case .endpoint:
                "CASE WHEN o.state = 'verified' THEN 'delivery' WHEN o.purchase_token IS NOT NULL THEN 'googleplay' ELSE \(verifierEndpoint) END"
            }
        // The column by age, in the database: one row per name and column, however many orders.
        let nowMilliseconds = now.epochMilliseconds
        let column = SQLStatement.joined(
            QueueShape.bounds.enumerated().map { index, minutes in
                // Integers of the code's own, written as literals: PostgreSQL would type bound
                // parameters in a CASE's results as text.
                "WHEN \(raw: String(nowMilliseconds)) - o.received_at <= \(raw: String(Int64(minutes) * 60_000)) THEN \(raw: String(index))"
            }, separator: " ")
        let rows = try readSnapshot { connection in
            try connection.fetchAll(
                """
                SELECT \(key) AS name, CASE \(column) ELSE \(raw: String(QueueShape.bounds.count)) END AS age_column, count(*)
                FROM orders AS o WHERE o.state NOT IN ('finished', 'cancelled', 'revoked')
                GROUP BY 1, 2
                """
            ) { (name: $0.string(0), column: $0.int(1), count: $0.int(2)) }
        }
        var shape = QueueShape(grouping: grouping)
        for row in rows { shape.add(row.name, column: row.column, count: row.count) }
        return shape
    }

    public func list(_ filter: OrderFilter) throws -> (orders: [StoredOrder], total: Int) {
        let whereClause = Self.whereClause(filter)
        return try readSnapshot { connection in
            let orders = try connection.fetchAll(
                """
                \(OrderColumns.select())\(whereClause)
                ORDER BY o.next_attempt_at IS NULL, o.next_attempt_at, o.received_at, o.id
                LIMIT \(filter.limit)
                """
            ) { try OrderColumns.record(from: $0).storedOrder }
            let total = try connection.fetchOne("SELECT count(*) FROM orders AS o\(whereClause)") { $0.int(0) } ?? 0
            return (orders, total)
        }
    }

    public func orderIDs(_ filter: OrderFilter) throws -> [String] {
        let whereClause = Self.whereClause(filter)
        return try readSnapshot { connection in
            try connection.fetchAll("SELECT o.order_id FROM orders AS o\(whereClause) ORDER BY o.id LIMIT \(filter.limit)") { $0.string(0) }
        }
    }

    /// ` WHERE …` for `filter` (empty without conditions), on `orders AS o`.
    static func whereClause(_ filter: OrderFilter) -> SQLStatement {
        var conditions: [SQLStatement] = []
        if !filter.states.isEmpty { conditions.append("o.state \(in: filter.states.map(\.rawValue))") }
        if let product = filter.productID { conditions.append("o.product_id = \(product)") }
        if let reason = filter.reason { conditions.append("o.reason = \(reason)") }
        if let before = filter.receivedBefore { conditions.append("o.received_at < \(before)") }
        if let prefix = filter.orderIDPrefix, !prefix.isEmpty {
            // substr counts characters in both engines; LIKE would read '%' and '_' in an id.
            conditions.append("substr(o.order_id, 1, \(raw: String(prefix.unicodeScalars.count))) = \(prefix)")
        }
        switch filter.store {
        case .googlePlay?: conditions.append("o.purchase_token IS NOT NULL")
        case .appStore?: conditions.append("o.purchase_token IS NULL")
        case nil: break
        }
        return conditions.isEmpty ? SQLStatement(raw: "") : " WHERE " + SQLStatement.joined(conditions, separator: " AND ")
    }
}
