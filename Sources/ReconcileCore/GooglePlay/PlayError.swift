import ReconcileFoundation

/// Google's error body, `{"error": {"code", "message", "errors": [{"reason", …}], "status"}}`,
/// reduced to its reason: `errors[0].reason`, else `status`. Never more than a short, printable
/// excerpt.
public struct PlayError: Sendable, Hashable {
    /// Whether the body is Google's error object at all.
    public var isGoogleError: Bool
    public var reason: String?

    public init(_ body: [UInt8]) {
        guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(body),
            case .object(let error)? = object["error"]
        else {
            isGoogleError = false
            reason = nil
            return
        }
        isGoogleError = true
        let first = error["errors"]?.arrayValue?.first?["reason"]?.stringValue ?? error["status"]?.stringValue
        reason = first.flatMap { text in
            let clean = PrintableText.excerpt(text, maximumScalars: 60)
            return clean.isEmpty ? nil : clean
        }
    }
}
