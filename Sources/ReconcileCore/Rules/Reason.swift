import Foundation

/// Why an order is where it is: a stable code for scripts, log filters and the `reason` column
/// (`duplicate_transaction`, `http_503`), and free text for a person (`transaction 7 is claimed
/// by order A1`). Printed as `code: detail`, the form log lines have always used.
public struct Reason: Sendable, Hashable, CustomStringConvertible {
    public var code: String
    public var detail: String?

    public init(_ code: String, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// Splits the printed form: the code before the first `": "`, the rest as detail.
    public init(parsing text: String) {
        if let colon = text.range(of: ": ") {
            self.init(String(text[..<colon.lowerBound]), detail: String(text[colon.upperBound...]))
        } else {
            self.init(text)
        }
    }

    public var description: String {
        detail.map { "\(code): \($0)" } ?? code
    }

    /// The same code, with `more` added to the detail (`; ` between).
    public func adding(_ more: String?) -> Reason {
        Reason(code, detail: Self.joined(detail, more))
    }

    static func joined(_ parts: String?...) -> String? {
        let present = parts.compactMap { $0 }
        return present.isEmpty ? nil : present.joined(separator: "; ")
    }
}
