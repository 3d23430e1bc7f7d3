/// A result row as the stores' shared readers see it: columns by 0-based index, whatever the
/// database (``SQLiteRow``, ``PostgreSQLRow``).
public protocol StoreRow: SendableMetatype {
    func isNull(_ column: Int32) -> Bool
    func string(_ column: Int32) -> String
    func optionalString(_ column: Int32) -> String?
    func int64(_ column: Int32) -> Int64
    func int(_ column: Int32) -> Int
    func optionalInt64(_ column: Int32) -> Int64?
}

