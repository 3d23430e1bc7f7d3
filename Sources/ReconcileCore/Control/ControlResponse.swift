import ReconcileFoundation

/// Answers on the control socket: `{"v":1,"ok":true,…}` or `{"v":1,"ok":false,"error":"…"}`.
public enum ControlResponse {
    /// A success with its fields.
    public static func ok(_ fields: JSONObject = JSONObject()) -> String {
        var object = JSONObject(["v": .integer(ControlRequest.version), "ok": .bool(true)])
        for member in fields.members { object[member.key] = member.value }
        return JSONWriter.string(.object(object))
    }

    /// A failure, with what went wrong.
    public static func error(_ message: String) -> String {
        JSONWriter.string(.object(JSONObject(["v": .integer(ControlRequest.version), "ok": .bool(false), "error": .string(message)])))
    }

    /// The answer to an action on every order in a state: counts, and the first few orders of
    /// each kind in `results` (`retry --state` on 150,000 orders is a short answer).
    public static func bulk(_ outcome: BulkOutcome) -> JSONObject {
        var object = JSONObject([
            "changed": .integer(outcome.changed), "matched": .integer(outcome.matched), "applied": .integer(outcome.applied),
            "deferred": .integer(outcome.deferred), "refused": .integer(outcome.refused), "not_found": .integer(outcome.notFound),
            "skipped": .integer(outcome.skipped), "not_reached": .integer(outcome.notReached),
            "interrupted": .bool(outcome.interrupted),
        ])
        object["results"] = Self.results(outcome.examples)
        return object
    }

    /// Reads a bulk answer back; `nil` for a per-order answer.
    public static func parseBulk(_ object: JSONObject) -> BulkOutcome? {
        guard let matched = object["matched"]?.int64Value else { return nil }
        func count(_ key: String) -> Int { Int(object[key]?.int64Value ?? 0) }
        var outcome = BulkOutcome(matched: Int(matched))
        outcome.applied = count("applied")
        outcome.deferred = count("deferred")
        outcome.refused = count("refused")
        outcome.notFound = count("not_found")
        outcome.skipped = count("skipped")
        outcome.notReached = count("not_reached")
        outcome.interrupted = object["interrupted"]?.boolValue ?? false
        outcome.examples = parseOutcomes(object)
        return outcome
    }

    /// The per-order results of an operator action.
    public static func outcomes(_ outcomes: [OperatorOutcome]) -> JSONObject {
        JSONObject([
            "changed": .integer(outcomes.filter(\.changed).count),
            "results": results(outcomes),
        ])
    }

    static func results(_ outcomes: [OperatorOutcome]) -> JSONValue {
        .array(outcomes.map { outcome in
            var object = JSONObject(["order_id": .string(outcome.orderID)])
            switch outcome.result {
            case .applied(let from, let to):
                object["result"] = .string("applied")
                object["from"] = .string(from.rawValue)
                object["to"] = .string(to.rawValue)
            case .deferred(let state):
                object["result"] = .string("deferred")
                object["from"] = .string(state.rawValue)
            case .refused(let reason):
                object["result"] = .string("refused")
                object["error"] = .string(reason)
            case .notFound:
                object["result"] = .string("not_found")
                object["error"] = .string("no such order")
            }
            return .object(object)
        })
    }

    /// Reads per-order results back (the CLI).
    public static func parseOutcomes(_ object: JSONObject) -> [OperatorOutcome] {
        (object["results"]?.arrayValue ?? []).compactMap { value in
            guard let item = value.objectValue, let orderID = item["order_id"]?.stringValue else { return nil }
            let from = item["from"]?.stringValue.flatMap(OrderState.init(rawValue:))
            let to = item["to"]?.stringValue.flatMap(OrderState.init(rawValue:))
            switch (item["result"]?.stringValue, from, to) {
            case ("applied", let from?, let to?): return OperatorOutcome(orderID: orderID, result: .applied(from: from, to: to))
            case ("deferred", let from?, _): return OperatorOutcome(orderID: orderID, result: .deferred(state: from))
            case ("not_found", _, _): return OperatorOutcome(orderID: orderID, result: .notFound)
            case ("refused", _, _): return OperatorOutcome(orderID: orderID, result: .refused(item["error"]?.stringValue ?? "refused"))
            default: return OperatorOutcome(orderID: orderID, result: .refused("the daemon's answer for this order could not be read"))
            }
        }
    }
}
