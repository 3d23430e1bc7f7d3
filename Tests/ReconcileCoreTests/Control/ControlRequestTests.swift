import ReconcileCore
import Testing
import ReconcileFoundation

@Suite("Control requests and answers")
struct ControlRequestTests {
    static func parse(_ text: String) throws(ControlRequest.Invalid) -> ControlRequest {
        try ControlRequest.parse(Array(text.utf8))
    }

    @Test("a request survives its own line")
    func roundTrip() throws {
        let request = ControlRequest(
            operation: .retry, orders: ["A1", "B-2"], note: "paid by hand", resetAttempts: true, force: true, onBehalfOf: "alice", wait: true)
        #expect(try Self.parse(request.line) == request)
        let resolve = ControlRequest(operation: .resolve, orders: ["A1"], note: "paid by hand", transactionID: "7777")
        #expect(try Self.parse(resolve.line) == resolve)
        let bulk = ControlRequest(operation: .retry, state: .escalated)
        #expect(bulk.line == #"{"v":1,"op":"retry","state":"escalated"}"#)
        #expect(try Self.parse(bulk.line) == bulk)
        #expect(try Self.parse(#"{"v":1,"op":"reload","wait":false}"#).wait == false)
        #expect(try Self.parse(#"{"op":"status","v":1}"#).operation == .status)
        var recover = ControlRequest(operation: .recover, note: "ticket 4411")
        recover.storeOrderID = .googlePlay("GPA.3312-4455-6677-88990")
        recover.package = "com.example.app"
        recover.user = "acct-9"
        #expect(try Self.parse(recover.line) == recover)
        #expect(try Self.parse(#"{"v":1,"op":"lookup","store_order_id":"mk5ttv4xyz"}"#).storeOrderID == .appStore("MK5TTV4XYZ"))
        #expect(try Self.parse(#"{"v":1,"op":"cancel","orders":["A1","A2"],"note":"x"}"#).orders == ["A1", "A2"], "cancel takes several")
        var circuit = ControlRequest(operation: .circuit)
        circuit.endpoint = .merchant
        circuit.circuitAction = .probeNow
        #expect(try Self.parse(circuit.line) == circuit)
        #expect(circuit.line.contains(#""circuit_action":"probe-now""#))
    }

    @Test(
        "bad requests are named",
        arguments: [
            ("", "not JSON: "),
            ("retry A1", "not JSON: "),
            ("[1,2]", "a request is a JSON object"),
            (#"{"op":"status"}"#, #"missing "v""#),
            (#"{"v":2,"op":"status"}"#, "unsupported version 2; this daemon speaks 1"),
            (#"{"v":"1","op":"status"}"#, #"missing "v""#),
            (#"{"v":1}"#, #"missing "op""#),
            (#"{"v":1,"op":"drop_table"}"#, #"unknown op "drop_table""#),
            (#"{"v":1,"op":"status","sudo":true}"#, #"unknown field "sudo""#),
            (#"{"v":1,"op":"retry"}"#, #"retry needs "orders" or "state""#),
            (#"{"v":1,"op":"hold"}"#, #"hold needs "orders""#),
            (#"{"v":1,"op":"cancel","state":"pending","note":"x"}"#, #""state" is for retry only; cancel takes "orders""#),
            (#"{"v":1,"op":"retry","orders":["A1"],"state":"escalated"}"#, #"give "orders" or "state", not both"#),
            (#"{"v":1,"op":"resolve","orders":["A1","A2"],"note":"x"}"#, "resolve takes exactly one order"),
            (#"{"v":1,"op":"circuit","endpoint":"merchant"}"#, #"circuit needs "endpoint" and "circuit_action""#),
            (#"{"v":1,"op":"circuit","endpoint":"nowhere","circuit_action":"close"}"#, #""endpoint" is not an endpoint (production, sandbox, merchant, delivery, revocation, googleplay, googleplay-token)"#),
            (#"{"v":1,"op":"circuit","endpoint":"merchant","circuit_action":"smash"}"#, #""circuit_action" is probe-now or close"#),
            (#"{"v":1,"op":"hold","orders":["A1"],"endpoint":"merchant"}"#, #""endpoint" and "circuit_action" are for circuit only"#),
            (#"{"v":1,"op":"cancel","orders":["A1"]}"#, #"cancel needs a "note""#),
            (#"{"v":1,"op":"cancel","orders":["A1"],"note":""}"#, #"cancel needs a "note""#),
            (#"{"v":1,"op":"hold","orders":["A1"],"reset_attempts":true}"#, #""reset_attempts" is for retry only"#),
            (#"{"v":1,"op":"release","orders":["A1"],"force":true}"#, #""force" is for retry only"#),
            (#"{"v":1,"op":"retry","orders":["A1"],"transaction_id":"1"}"#, #""transaction_id" is for resolve only"#),
            (#"{"v":1,"op":"resolve","orders":["A1"],"note":"x","transaction_id":""}"#, #""transaction_id" is empty"#),
            (#"{"v":1,"op":"status","orders":["A1"]}"#, "status takes no order fields"),
            (#"{"v":1,"op":"hold","orders":["A1"],"note":"tab\there"}"#, #""note" must be one line of printable text"#),
            (#"{"v":1,"op":"hold","orders":["A1"],"note":"line\u2028break"}"#, #""note" must be one line of printable text"#),
            (#"{"v":1,"op":"hold","orders":["A1"],"as":"eve\u0085"}"#, #""as" must be one line of printable text"#),
            (#"{"v":1,"op":"hold","orders":"A1"}"#, #""orders" must be a list of order ids"#),
            (#"{"v":1,"op":"hold","orders":["../etc/passwd"]}"#, #""orders" holds something that is not an order id"#),
            (#"{"v":1,"op":"hold","state":"lost"}"#, #""state" is not a state"#),
            (#"{"v":1,"op":"hold","orders":["A1"],"note":"two\nlines"}"#, #""note" must be one line of printable text of at most 1000 bytes"#),
            (#"{"v":1,"op":"retry","orders":["A1"],"force":"yes"}"#, #""force" must be true or false"#),
            (#"{"v":1,"op":"status","v":1}"#, "not JSON: "),
            (#"{"v":1,"op":"lookup"}"#, #"lookup needs "store_order_id""#),
            (#"{"v":1,"op":"lookup","store_order_id":"MK/1"}"#, #""MK/1" is not a store order id"#),
            (#"{"v":1,"op":"lookup","store_order_id":"MK5","user":"u"}"#, #""user" is for recover only"#),
            (#"{"v":1,"op":"lookup","store_order_id":"MK5","note":"n"}"#, "lookup takes no order fields"),
            (#"{"v":1,"op":"recover","store_order_id":"MK5","orders":["A1"]}"#, "recover takes no order fields"),
            (#"{"v":1,"op":"recover","store_order_id":"MK5","package":"com.example.app"}"#, #""package" is for Google Play orders (GPA.…) only"#),
            (#"{"v":1,"op":"recover","store_order_id":"GPA.1-2","package":"app"}"#, #""package" is not an Android package name"#),
            (#"{"v":1,"op":"recover","store_order_id":"GPA.1-2","user":""}"#, #""user" is empty"#),
            (#"{"v":1,"op":"hold","orders":["A1"],"store_order_id":"MK5"}"#, #"hold takes no "store_order_id", "package" or "user""#),
        ])
    func invalid(line: String, message: String) {
        #expect {
            _ = try Self.parse(line)
        } throws: { error in
            String(describing: error).hasPrefix(message)
        }
    }

    @Test("an order operation becomes the store's request, with the actor the daemon decides")
    func operatorRequest() throws {
        let request = try Self.parse(#"{"v":1,"op":"resolve","orders":["A1"],"note":"by hand","transaction_id":"77"}"#)
        #expect(request.operatorRequest(actor: .operator("alice")) == OperatorRequest(
            action: .resolve, target: .orders(["A1"]), actor: .operator("alice"), note: "by hand", transactionID: "77"))
        let bulk = try Self.parse(#"{"v":1,"op":"retry","state":"escalated","reset_attempts":true}"#)
        #expect(bulk.operatorRequest(actor: .operator("bob"))?.target == .state(.escalated))
        #expect(try Self.parse(#"{"v":1,"op":"wake"}"#).operatorRequest(actor: .operator("bob")) == nil)
    }

    @Test("requests over 64 KiB and nested too deep are refused before they are looked at")
    func limits() {
        let huge = #"{"v":1,"op":"hold","orders":["A1"],"note":""# + String(repeating: "x", count: 70_000) + #""}"#
        #expect {
            _ = try Self.parse(huge)
        } throws: { error in
            String(describing: error) == "request larger than 64 KiB"
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect {
            _ = try Self.parse(deep)
        } throws: { error in
            String(describing: error).hasPrefix("not JSON: ")
        }
    }

    @Test("per-order results go out and come back; a garbled result is not taken for a change")
    func outcomes() throws {
        let outcomes = [
            OperatorOutcome(orderID: "A1", result: .applied(from: .escalated, to: .pending)),
            OperatorOutcome(orderID: "A2", result: .deferred(state: .verifying)),
            OperatorOutcome(orderID: "A3", result: .refused("cannot retry: the order is finished (done)")),
            OperatorOutcome(orderID: "A4", result: .notFound),
        ]
        let line = ControlResponse.ok(ControlResponse.outcomes(outcomes))
        guard case .object(let object) = try JSONParser().parse(Array(line.utf8)) else {
            Issue.record("not an object: \(line)")
            return
        }
        #expect(object["changed"]?.int64Value == 2)
        #expect(ControlResponse.parseOutcomes(object) == outcomes)

        let garbled = try JSONParser().parse(Array(#"{"results":[{"order_id":"A1","result":"applied","from":"nowhere"}]}"#.utf8))
        let parsed = ControlResponse.parseOutcomes(try #require(garbled.objectValue))
        #expect(parsed.map(\.changed) == [false])
    }

    @Test("errors are one line of JSON")
    func errorLine() {
        #expect(ControlResponse.error("permission denied: \"x\"\n") == #"{"v":1,"ok":false,"error":"permission denied: \"x\"\n"}"#)
    }
}
