/// How many uses of one ``SQLTemplate`` become one statement on PostgreSQL: a write whose
/// answer nobody reads (``RelationalConnection/performLater(_:)``), queued many times in a turn
/// (one history row, one order update per order), is sent as one multi-row statement that reads
/// its rows from a JSON array (`json_populate_recordset`, typed by the table's own row type), so
/// that the server parses, plans and starts one statement for the turn instead of one per order.
///
/// Each use is keyed by the order it writes (``keyIndex``). Uses for different orders are
/// independent, so a use may join a batch queued before other orders' writes; it never moves
/// past a write of its own order, nor past a write that has no batch form (which keeps its
/// place). SQLite has no round trips to save and runs each use as it comes.
package struct SQLBatch: Sendable {
    /// The multi-row statement: its only parameter, `$1::json`, is an array of objects, one per
    /// use, keyed by ``columns`` (or, with ``arrayTypes``, one array parameter per value); `nil`
    /// for a write sent alone (``alone(keyIndex:valueCount:)``).
    package let postgresql: String?
    /// The column each of the template's values fills, in order; `nil` for a value the batch
    /// does not send (the single-row form binds it twice).
    package let columns: [String?]
    /// The value that names the order a use writes.
    package let keyIndex: Int
    /// Whether one batch may hold each key at most once: an `UPDATE … FROM` joins each row once,
    /// so two updates of one row go in two statements, in order.
    package let onePerKey: Bool
    /// For a batch of wide values (``unnest(into:columns:key:suffix:)``): each value's PostgreSQL type
    /// (`bigint`, `text` or `bytea`); the uses travel as one binary array per value, which the
    /// server reads without parsing, instead of as JSON.
    package var arrayTypes: [String]?
    /// For a statement whose rows are read (``RelationalConnection/fetchEach(_:_:)``): which
    /// value of a use its multi-row form returns, and in which column, so that each row finds
    /// its use (an insert returns rows only for what it inserted, in no promised order).
    package var returned: (valueIndex: Int, column: Int32)?

    /// A write of one order with no multi-row form: sent on its own, it lets other orders'
    /// writes join batches queued before it (a write without any ``SQLBatch`` stops them).
    package static func alone(keyIndex: Int, valueCount: Int) -> SQLBatch {
        SQLBatch(postgresql: nil, columns: [String?](repeating: nil, count: valueCount), keyIndex: keyIndex, onePerKey: true)
    }

    /// `INSERT INTO table (columns) SELECT columns FROM json_populate_recordset(…)`, rows
    /// inserted in the order they were queued; `select` replaces a column's expression (over the
    /// batch's row `v`), `suffix` follows (an `ON CONFLICT` clause).
    package static func insert(
        into table: String, columns: [String?], key: String, select: [String: String] = [:], suffix: String = ""
    ) -> SQLBatch {
        let named = columns.compactMap { $0 }
        // Columns no value fills, only an expression.
        let computed = select.keys.filter { !named.contains($0) }.sorted()
        let targets = named + computed
        let expressions = targets.map { select[$0] ?? "v.\($0)" }
        let sql = """
            INSERT INTO \(table) (\(targets.joined(separator: ", ")))
            SELECT \(expressions.joined(separator: ", ")) FROM json_populate_recordset(NULL::\(table), $1::json) AS v\(suffix.isEmpty ? "" : "\n" + suffix)
            """
        return SQLBatch(postgresql: sql, columns: columns, keyIndex: columns.firstIndex(of: key)!, onePerKey: false)
    }

    /// This batch, its rows matched to their uses by the value at `valueIndex`, which each row
    /// returns in `column` (a unique key: the uses of one batch never repeat it).
    package func returning(_ valueIndex: Int, inColumn column: Int32) -> SQLBatch {
        var batch = self
        batch.returned = (valueIndex, column)
        return batch
    }

    /// `INSERT INTO table (columns) SELECT * FROM unnest($1::type[], …)`, rows inserted in the
    /// order they were queued, `suffix` after (an `ON CONFLICT` clause): each value travels as
    /// one binary array, which the server reads without parsing — long text and bytes (a
    /// receipt, a raw file) and wide rows (an order's 38 columns) cost a fraction of what its
    /// JSON parser takes. `columns` are the names and types (`bigint`, `text`, `bytea`) of the
    /// template's values, in order.
    package static func unnest(into table: String, columns: [(name: String, type: String)], key: String, suffix: String = "") -> SQLBatch {
        let arrays = columns.enumerated().map { "$\($0.offset + 1)::\($0.element.type)[]" }
        let sql = """
            INSERT INTO \(table) (\(columns.map(\.name).joined(separator: ", "))) SELECT * FROM unnest(\(arrays.joined(separator: ", ")))\
            \(suffix.isEmpty ? "" : "\n" + suffix)
            """
        var batch = SQLBatch(
            postgresql: sql, columns: columns.map(\.name), keyIndex: columns.firstIndex { $0.name == key }!, onePerKey: false)
        batch.arrayTypes = columns.map(\.type)
        return batch
    }

    /// `UPDATE table SET column = v.column, … FROM json_populate_recordset(…) WHERE id = v.id`:
    /// the template's values are `columns`' new values, then the row's `id`.
    package static func update(_ table: String, columns: [String]) -> SQLBatch {
        let assignments = columns.map { "\($0) = v.\($0)" }.joined(separator: ", ")
        // The ids again, as an array the planner can look up in the primary key: it would
        // otherwise guess 100 rows from the function and scan the whole table to join them.
        let sql = """
            UPDATE \(table) AS t SET \(assignments)
            FROM json_populate_recordset(NULL::\(table), $1::json) AS v
            WHERE t.id = v.id AND t.id = ANY (ARRAY(SELECT (e->>'id')::bigint FROM json_array_elements($1::json) AS e))
            """
        return SQLBatch(postgresql: sql, columns: columns + ["id"], keyIndex: columns.count, onePerKey: true)
    }
}
