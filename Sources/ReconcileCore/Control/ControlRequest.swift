import ReconcileFoundation

/// One request on the control socket (DESIGN §10): a JSON object on one line,
/// `{"v":1,"op":"retry","orders":["A1"],…}`.
public struct ControlRequest: Sendable, Hashable {
    /// The operations. `status` and `wake` read or nudge; the rest change orders or the daemon
    /// and need a privileged peer.
    public enum Operation: String, CaseIterable, Sendable, Hashable {
        case status, wake, reload, retry, hold, release, resolve, cancel
        /// A customer's store order as the store tells it (DESIGN §5b).
        case lookup
        /// Orders for that store order's purchases no stored order holds.
        case recover
        /// Steers an endpoint's circuit (`endpoint`, `circuit_action`).
        case circuit

        /// Whether only root or the daemon's group may ask for it.
        public var isWrite: Bool {
            switch self {
            case .status, .wake: false
            default: true
            }
        }

        /// The operator action it carries, for the order operations.
        public var action: OperatorAction? {
            switch self {
            case .retry: .retry
            case .hold: .hold
            case .release: .release
            case .resolve: .resolve
            case .cancel: .cancel
            case .status, .wake, .reload, .lookup, .recover, .circuit: nil
            }
        }
    }

    public static let version = 1
    /// Requests longer than this are refused.
    public static let maximumSize = 64 * 1024

    public var operation: Operation
    public var orders: [String]
    /// `retry --state S` and friends.
    public var state: OrderState?
    public var note: String?
    public var resetAttempts: Bool
    public var force: Bool
    public var transactionID: String?
    /// The operator behind `sudo` (`SUDO_USER`), honoured only from root.
    public var onBehalfOf: String?
    /// `reload --wait`: answer when the reload is done (the default), or at once.
    public var wait: Bool
    /// `lookup` and `recover`: the customer's order id from the store's receipt.
    public var storeOrderID: StoreOrderID?
    /// `lookup` and `recover` of a Play order: which app (`--package`).
    public var package: String?
    /// `recover --user`: the account to grant the purchases to.
    public var user: String?
    /// `circuit`: which endpoint, and what to do to its circuit.
    public var endpoint: VerificationEndpoint?
    public var circuitAction: CircuitAction?

    public init(
        operation: Operation, orders: [String] = [], state: OrderState? = nil, note: String? = nil, resetAttempts: Bool = false,
        force: Bool = false, transactionID: String? = nil, onBehalfOf: String? = nil, wait: Bool = true
    ) {
        self.operation = operation
        self.orders = orders
        self.state = state
        self.note = note
        self.resetAttempts = resetAttempts
        self.force = force
        self.transactionID = transactionID
        self.onBehalfOf = onBehalfOf
        self.wait = wait
    }

    /// Why a line is not a request.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Parses one request line.
    public static func parse(_ line: some Collection<UInt8>) throws(Invalid) -> ControlRequest {
        guard line.count <= maximumSize else { throw Invalid(description: "request larger than 64 KiB") }
        let value: JSONValue
        do {
            value = try JSONParser(maximumDepth: 8).parse(line)
        } catch {
            throw Invalid(description: "not JSON: \(error)")
        }
        guard case .object(let object) = value else { throw Invalid(description: "a request is a JSON object") }
        guard let version = object["v"]?.int64Value else { throw Invalid(description: "missing \"v\"") }
        guard version == Int64(Self.version) else { throw Invalid(description: "unsupported version \(version); this daemon speaks 1") }
        guard let opName = object["op"]?.stringValue else { throw Invalid(description: "missing \"op\"") }
        guard let operation = Operation(rawValue: opName) else {
            throw Invalid(description: "unknown op \"\(OrderFileParser.quoted(opName).dropFirst().dropLast())\"")
        }
        let known: Set<String> = [
            "v", "op", "orders", "state", "note", "reset_attempts", "force", "transaction_id", "as", "wait", "store_order_id", "package", "user",
            "endpoint", "circuit_action",
        ]
        if let unknown = object.keys.first(where: { !known.contains($0) }) {
            throw Invalid(description: "unknown field \"\(OrderFileParser.quoted(unknown).dropFirst().dropLast())\"")
        }
        var request = ControlRequest(operation: operation)
        if let orders = object["orders"] {
            guard case .array(let list) = orders, list.count <= 10_000 else { throw Invalid(description: "\"orders\" must be a list of order ids") }
            request.orders = try list.map { (item) throws(Invalid) -> String in
                guard let id = item.stringValue, OrderFileParser.isValidOrderID(id) else {
                    throw Invalid(description: "\"orders\" holds something that is not an order id")
                }
                return id
            }
        }
        if let state = object["state"] {
            guard let name = state.stringValue, let parsed = OrderState(rawValue: name) else { throw Invalid(description: "\"state\" is not a state") }
            request.state = parsed
        }
        request.note = try optionalText(object, "note", limit: 1000)
        request.transactionID = try optionalText(object, "transaction_id", limit: 128)
        request.onBehalfOf = try optionalText(object, "as", limit: 64)
        request.resetAttempts = try flag(object, "reset_attempts") ?? false
        request.force = try flag(object, "force") ?? false
        request.wait = try flag(object, "wait") ?? true
        if let id = try optionalText(object, "store_order_id", limit: 256) {
            do {
                request.storeOrderID = try StoreOrderID.parse(id)
            } catch {
                throw Invalid(description: error.description)
            }
        }
        request.package = try optionalText(object, "package", limit: 256)
        request.user = try optionalText(object, "user", limit: OrderFileParser.textFieldMaximumLength)
        if let name = try optionalText(object, "endpoint", limit: 64) {
            guard let endpoint = VerificationEndpoint(rawValue: name) else {
                throw Invalid(description: "\"endpoint\" is not an endpoint (\(VerificationEndpoint.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            request.endpoint = endpoint
        }
        if let name = try optionalText(object, "circuit_action", limit: 32) {
            guard let action = CircuitAction(rawValue: name) else { throw Invalid(description: "\"circuit_action\" is probe-now or close") }
            request.circuitAction = action
        }
        try request.validate()
        return request
    }

    /// The verbs' rules beyond the JSON shape, the same that `reconcilectl` applies before it
    /// sends (DESIGN §10): order operations name `orders` or, for `retry` only, a `state`, never
    /// both; `resolve` takes one order; `resolve` and `cancel` need a note; `reset_attempts` and `force` belong
    /// to `retry`, `transaction_id` (not empty) to `resolve`.
    public func validate() throws(Invalid) {
        let name = operation.rawValue
        if operation == .circuit {
            if !orders.isEmpty || state != nil || note != nil || resetAttempts || force || transactionID != nil || storeOrderID != nil
                || package != nil || user != nil
            {
                throw Invalid(description: "circuit takes only \"endpoint\" and \"circuit_action\"")
            }
            guard endpoint != nil, circuitAction != nil else { throw Invalid(description: "circuit needs \"endpoint\" and \"circuit_action\"") }
            return
        }
        if endpoint != nil || circuitAction != nil { throw Invalid(description: "\"endpoint\" and \"circuit_action\" are for circuit only") }
        if operation == .lookup || operation == .recover {
            if !orders.isEmpty || state != nil || resetAttempts || force || transactionID != nil || (note != nil && operation == .lookup) {
                throw Invalid(description: "\(name) takes no order fields")
            }
            guard let storeOrderID else { throw Invalid(description: "\(name) needs \"store_order_id\"") }
            if user != nil && operation != .recover { throw Invalid(description: "\"user\" is for recover only") }
            if user?.isEmpty == true { throw Invalid(description: "\"user\" is empty") }
            if package != nil, case .appStore = storeOrderID {
                throw Invalid(description: "\"package\" is for Google Play orders (GPA.…) only")
            }
            if let package, AndroidPackageName.problem(package) != nil {
                throw Invalid(description: "\"package\" is not an Android package name")
            }
            return
        }
        if storeOrderID != nil || package != nil || user != nil {
            throw Invalid(description: "\(name) takes no \"store_order_id\", \"package\" or \"user\"")
        }
        guard operation.action != nil else {
            if !orders.isEmpty || state != nil || note != nil || resetAttempts || force || transactionID != nil {
                throw Invalid(description: "\(name) takes no order fields")
            }
            return
        }
        if !orders.isEmpty && state != nil { throw Invalid(description: "give \"orders\" or \"state\", not both") }
        if state != nil && operation != .retry { throw Invalid(description: "\"state\" is for retry only; \(name) takes \"orders\"") }
        if orders.isEmpty && state == nil {
            throw Invalid(description: operation == .retry ? "retry needs \"orders\" or \"state\"" : "\(name) needs \"orders\"")
        }
        if operation == .resolve && orders.count != 1 { throw Invalid(description: "resolve takes exactly one order") }
        if (operation == .resolve || operation == .cancel) && (note ?? "").isEmpty {
            throw Invalid(description: "\(name) needs a \"note\"")
        }
        if (resetAttempts || force) && operation != .retry {
            throw Invalid(description: "\"\(resetAttempts ? "reset_attempts" : "force")\" is for retry only")
        }
        if transactionID != nil && operation != .resolve { throw Invalid(description: "\"transaction_id\" is for resolve only") }
        if transactionID?.isEmpty == true { throw Invalid(description: "\"transaction_id\" is empty") }
    }

    /// The order operation as the store applies it, by `actor`; `nil` for `status`, `wake` and
    /// `reload`.
    public func operatorRequest(actor: TransitionActor) -> OperatorRequest? {
        guard let action = operation.action else { return nil }
        return OperatorRequest(
            action: action, target: state.map { .state($0) } ?? .orders(orders), actor: actor, note: note,
            resetAttempts: resetAttempts, force: force, transactionID: transactionID)
    }

    /// A note for an order's history: one line of printable text (no control or format
    /// character), at most 1,000 bytes of UTF-8.
    public static func isValidNote(_ text: String) -> Bool {
        isPrintableLine(text, maximumBytes: 1000)
    }

    /// At most `maximumBytes` of UTF-8, without control or format (bidi) characters.
    static func isPrintableLine(_ text: String, maximumBytes: Int) -> Bool {
        text.utf8.count <= maximumBytes
            && !text.unicodeScalars.contains(where: { PrintableText.isControl($0) || PrintableText.isFormat($0) })
    }

    static func optionalText(_ object: JSONObject, _ key: String, limit: Int) throws(Invalid) -> String? {
        guard let value = object[key] else { return nil }
        if case .null = value { return nil }
        guard let text = value.stringValue, isPrintableLine(text, maximumBytes: limit)
        else { throw Invalid(description: "\"\(key)\" must be one line of printable text of at most \(limit) bytes") }
        return text
    }

    static func flag(_ object: JSONObject, _ key: String) throws(Invalid) -> Bool? {
        guard let value = object[key] else { return nil }
        guard let flag = value.boolValue else { throw Invalid(description: "\"\(key)\" must be true or false") }
        return flag
    }

    /// The request as one line of JSON (what `reconcilectl` sends).
    public var line: String {
        var object = JSONObject(["v": .integer(Self.version), "op": .string(operation.rawValue)])
        if !orders.isEmpty { object["orders"] = .array(orders.map(JSONValue.string)) }
        if let state { object["state"] = .string(state.rawValue) }
        if let note { object["note"] = .string(note) }
        if resetAttempts { object["reset_attempts"] = .bool(true) }
        if force { object["force"] = .bool(true) }
        if let transactionID { object["transaction_id"] = .string(transactionID) }
        if let onBehalfOf { object["as"] = .string(onBehalfOf) }
        if !wait { object["wait"] = .bool(false) }
        if let storeOrderID { object["store_order_id"] = .string(storeOrderID.id) }
        if let package { object["package"] = .string(package) }
        if let user { object["user"] = .string(user) }
        if let endpoint { object["endpoint"] = .string(endpoint.rawValue) }
        if let circuitAction { object["circuit_action"] = .string(circuitAction.rawValue) }
        return JSONWriter.string(.object(object))
    }
}
