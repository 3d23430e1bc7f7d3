import Foundation

/// Why an order is where it is: a stable code for scripts, log filters and the `reason` column
/// (`duplicate_transaction`, `http_503`), and free text for a person (`transaction 7 is claimed
/// by order A1`). Printed as `code: detail`, the form log lines have always used.
///
/// The code is always a ``ReasonCode`` constant or factory; text read back from the store or the
/// wire is split with ``init(parsing:)``.
public struct Reason: Sendable, Hashable, CustomStringConvertible {
    public var code: ReasonCode
    public var detail: String?

    public init(_ code: ReasonCode, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// Splits the printed form: the code before the first `": "`, the rest as detail. An unknown
    /// code is kept as it is.
    public init(parsing text: String) {
        if let colon = text.range(of: ": ") {
            self.init(ReasonCode(rawValue: String(text[..<colon.lowerBound])), detail: String(text[colon.upperBound...]))
        } else {
            self.init(ReasonCode(rawValue: text))
        }
    }

    public var description: String {
        detail.map { "\(code): \($0)" } ?? code.rawValue
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
