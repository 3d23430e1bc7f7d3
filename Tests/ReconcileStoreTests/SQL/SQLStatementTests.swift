import Foundation
import ReconcileCore
import Testing
@testable import ReconcilePostgreSQL
@testable import ReconcileSQLite
@testable import ReconcileStore
import ReconcileFoundation

/// The SQL layer both engines' statements are written in: what each dialect's text is, and which
/// values travel apart from it.
@Suite("SQL statements")
struct SQLStatementTests {
    @Test("an interpolated value is bound, never written into the text: `?` on SQLite, `$n` on PostgreSQL")
    func values() {
        let orderID = "A1'; DROP TABLE orders; --"
        let statement: SQLStatement = "SELECT id FROM orders WHERE order_id = \(orderID) AND attempts < \(3) AND next_attempt_at <= \(Date(epochMilliseconds: 42))"
        #expect(statement.render(.sqlite).sql == "SELECT id FROM orders WHERE order_id = ? AND attempts < ? AND next_attempt_at <= ?")
        #expect(statement.render(.postgresql).sql == "SELECT id FROM orders WHERE order_id = $1 AND attempts < $2 AND next_attempt_at <= $3")
        #expect(statement.render(.sqlite).values == [.text(orderID), .integer(3), .integer(42)])
        #expect(statement.render(.postgresql).values == statement.render(.sqlite).values)
    }

    @Test("nil binds NULL; raw text, nested statements and joins keep their order and numbering")
    func composition() {
        let none: String? = nil
        let condition: SQLStatement = "state = \("pending")"
        let joined = SQLStatement.joined([condition, "reason = \(none)", SQLStatement(raw: "lease_owner IS NULL")], separator: " AND ")
        let statement: SQLStatement = "UPDATE orders SET \(raw: "attempts") = \(1) WHERE \(joined)"
        #expect(statement.render(.postgresql).sql == "UPDATE orders SET attempts = $1 WHERE state = $2 AND reason = $3 AND lease_owner IS NULL")
        #expect(statement.render(.postgresql).values == [.integer(1), .text("pending"), .null])
        #expect(("SELECT 1" + " WHERE x = \(2)" as SQLStatement).render(.sqlite) == ("SELECT 1 WHERE x = ?", [.integer(2)]))
    }

    @Test("a list is one value whatever its length: an array on PostgreSQL, a JSON array through json_each on SQLite")
    func lists() throws {
        let ids: [Int64] = [3, 1, 2]
        let statement: SQLStatement = "SELECT id FROM orders WHERE id \(in: ids) AND order_id \(in: ["a\"b", "c\\d", "e\nf"])"
        #expect(statement.render(.postgresql).sql == "SELECT id FROM orders WHERE id = ANY($1::bigint[]) AND order_id = ANY($2::text[])")
        #expect(
            statement.render(.sqlite).sql
                == "SELECT id FROM orders WHERE id IN (SELECT value FROM json_each(?)) AND order_id IN (SELECT value FROM json_each(?))")
        #expect(statement.render(.sqlite).values == [.integerList(ids), .textList(["a\"b", "c\\d", "e\nf"])])
        // SQLite reads the JSON back as the same texts, quotes, backslashes and control characters included.
        let connection = try SQLiteConnection(path: ":memory:", mode: .readWrite(create: true))
        let texts = ["a\"b", "c\\d", "e\nf", "ü€😀", ""]
        let back = try connection.fetchAll("SELECT value FROM json_each(\(SQLValue.textList(texts)))") { $0.string(0) }
        #expect(back == texts)
        let numbers = try connection.fetchAll("SELECT value FROM json_each(\(SQLValue.integerList([Int64.min, 0, Int64.max])))") { $0.int64(0) }
        #expect(numbers == [Int64.min, 0, Int64.max])
    }

    @Test("clauses only one dialect writes render as nothing in the other")
    func clauses() {
        let statement: SQLStatement =
            "SELECT x.id FROM outbox AS x \(.indexedBy("outbox_due")) WHERE x.id = \(1) \(.forUpdateOfSkipLocked("x")) -- \(.greatest("a", "b"))"
        #expect(statement.render(.sqlite).sql == "SELECT x.id FROM outbox AS x INDEXED BY outbox_due WHERE x.id = ?  -- max(a, b)")
        #expect(statement.render(.postgresql).sql == "SELECT x.id FROM outbox AS x  WHERE x.id = $1 FOR UPDATE OF x SKIP LOCKED -- GREATEST(a, b)")
        #expect(SQLClause.forUpdate.render(.sqlite).isEmpty && SQLClause.forUpdate.render(.postgresql) == "FOR UPDATE")
    }

    @Test("a template renders once and binds each use's values in the prototype's order")
    func templates() {
        let template = SQLTemplate("UPDATE orders SET state = \(SQLValue.null) WHERE id \(in: [Int64]()) AND lease_owner = \(SQLValue.null)")
        #expect(template.valueCount == 3)
        let use = template([.text("pending"), .integerList([7, 8]), .text("n/1")])
        #expect(use.render(.postgresql).sql == "UPDATE orders SET state = $1 WHERE id = ANY($2::bigint[]) AND lease_owner = $3")
        #expect(use.render(.sqlite).sql == "UPDATE orders SET state = ? WHERE id IN (SELECT value FROM json_each(?)) AND lease_owner = ?")
        #expect(use.render(.sqlite).values == [.text("pending"), .integerList([7, 8]), .text("n/1")])
        #expect(use.template?.key == template.key)
    }

    @Test("the order columns' select list is the declaration, in order, and every plan column has a value")
    func orderColumns() {
        let names = OrderColumns.record.components(separatedBy: ", ")
        #expect(names.count == OrderColumn.allCases.count)
        for column in OrderColumn.allCases {
            #expect(names[Int(column.rawValue)] == (column.isProof ? "p." : "o.") + column.name)
        }
        #expect(!OrderColumns.plan.contains { $0.isProof || $0 == .id || $0 == .orderID })
        let record = OrderRecord(reference: 1, orderID: "A1", productID: "gems", state: .pending, receivedAt: Date(), updatedAt: Date())
        #expect(OrderColumns.planValues(record).count == OrderColumns.plan.count)
    }
}
