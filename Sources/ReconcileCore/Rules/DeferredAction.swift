import ReconcileFoundation

/// An operator's action on an order whose attempt is in flight (DESIGN §4): recorded with the
/// order and applied by the completion that ends the attempt. Stored as one JSON object (the form
/// the `pending_action` column has always held).
public struct DeferredAction: Sendable, Hashable {
    public var request: OperatorRequest
    /// The verifiers configured when it was asked (decide whether a retried order has usable proof).
    public var verifiers: ConfiguredVerifiers?

    public init(request: OperatorRequest, verifiers: ConfiguredVerifiers?) {
        self.request = request
        self.verifiers = verifiers
    }

    /// With `[Verifier] Kind=kind` only.
    public init(request: OperatorRequest, verifierKind: VerifierKind?) {
        self.init(request: request, verifiers: verifierKind.map { ConfiguredVerifiers(kind: $0) })
    }

    /// The stored form: `{"action", "actor", "note", "reset_attempts", "force", "transaction_id", "kind", "google_play"}`
    /// (`kind` null with `google_play` true: a Google Play-only configuration).
    public var storedForm: String {
        JSONWriter.string(.object(JSONObject([
            "action": .string(request.action.rawValue), "actor": .string(request.actor.description),
            "note": request.note.map(JSONValue.string), "reset_attempts": .bool(request.resetAttempts), "force": .bool(request.force),
            "transaction_id": request.transactionID.map(JSONValue.string), "kind": verifiers?.kind.map { .string($0.rawValue) },
            "google_play": verifiers.map { .bool($0.googlePlay) },
        ])))
    }

    /// Reads the stored form; `nil` when it is not one (then nothing waits).
    public init?(storedForm text: String, orderID: String) {
        guard case .object(let object)? = try? JSONParser().parse(text),
            let action = object["action"]?.stringValue.flatMap(OperatorAction.init(rawValue:)),
            let actor = object["actor"]?.stringValue.flatMap(TransitionActor.init)
        else { return nil }
        request = OperatorRequest(
            action: action, target: .orders([orderID]), actor: actor, note: object["note"]?.stringValue,
            resetAttempts: object["reset_attempts"]?.boolValue ?? false, force: object["force"]?.boolValue ?? false,
            transactionID: object["transaction_id"]?.stringValue)
        let kind = object["kind"]?.stringValue.flatMap(VerifierKind.init(rawValue:))
        let googlePlay = object["google_play"]?.boolValue
        // Stored before Google Play: the kind alone.
        verifiers = kind == nil && googlePlay == nil ? nil : ConfiguredVerifiers(kind: kind, googlePlay: googlePlay ?? false)
    }
}
