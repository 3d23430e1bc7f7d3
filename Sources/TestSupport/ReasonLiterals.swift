import ReconcileCore

// In the tests a reason may be written as the words the store keeps, `reconcilectl` prints and
// the journal carries (`order.reason == "circuit_open"`, `"http_503: Service Unavailable"`):
// those words are the outside contract a test checks. The daemon's own code has no such
// conformance (``ReasonCode``'s constants and factories only), so a bare literal never becomes
// a code there.

extension ReasonCode: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }
}

extension Reason: ExpressibleByStringLiteral {
    /// The printed form: the code, then `": "` and the detail when there is one.
    public init(stringLiteral value: String) {
        self.init(parsing: value)
    }
}
