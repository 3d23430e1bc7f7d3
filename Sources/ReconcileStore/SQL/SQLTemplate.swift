/// A statement rendered once per dialect and bound many times: for the statements every turn
/// runs for every order, so that neither the SQL text is built again nor the connection's cache
/// of prepared statements hashes it again (the connection finds it by the template's identity).
///
/// Made from a prototype statement whose interpolated values only mark where values go; each use
/// binds values in the same order (`template([.integer(reference)])`).
package final class SQLTemplate: Sendable {
    private let sqlite: String
    private let postgresql: String
    /// How many values a use binds.
    package let valueCount: Int
    /// How queued uses become one statement on PostgreSQL, for a write that has a multi-row form.
    package let batch: SQLBatch?

    package init(_ prototype: SQLStatement, batch: SQLBatch? = nil) {
        let (sqlite, values) = prototype.render(.sqlite)
        self.sqlite = sqlite
        postgresql = prototype.render(.postgresql).sql
        valueCount = values.count
        precondition(batch.map { $0.columns.count == values.count } ?? true, "a batch names every value of its template")
        self.batch = batch
    }

    /// The SQL text for `dialect`.
    package func sql(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .sqlite: sqlite
        case .postgresql: postgresql
        }
    }

    /// The statement with `values` bound, in the order of the prototype's values.
    package func callAsFunction(_ values: [SQLValue]) -> SQLStatement {
        SQLStatement(template: self, values: values)
    }

    /// The key the connections cache the prepared statement under.
    package var key: ObjectIdentifier { ObjectIdentifier(self) }
}
