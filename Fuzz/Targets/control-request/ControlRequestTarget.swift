// Fuzz target: one request line on the control socket, as ControlHandler takes it: parsed,
// answered with an error line when refused, turned into the store's operator request when not.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlRequest(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ControlRequestTarget.run(inputBytes(data, size))
    return 0
}

enum ControlRequestTarget {
    static func run(_ line: [UInt8]) {
        let request: ControlRequest
        do {
            request = try ControlRequest.parse(line)
        } catch {
            checkRefusal(error)
            return
        }
        invariant(line.count <= ControlRequest.maximumSize, "accepted a line over the size limit")
        checkAccepted(request)
        // The same request padded past the limit with whitespace (still valid JSON) is refused:
        // the limit holds for any request, not only for the lengths the fuzzer tries.
        let padded = line + [UInt8](repeating: 0x20, count: ControlRequest.maximumSize + 1 - line.count)
        invariant((try? ControlRequest.parse(padded)) == nil, "accepted a request of \(padded.count) bytes")
    }

    static func checkAccepted(_ request: ControlRequest) {
        invariant(request.orders.allSatisfy(OrderFileParser.isValidOrderID), "accepted an invalid order id")
        invariant(request.note.map(ControlRequest.isValidNote) ?? true, "accepted an invalid note")
        invariant((try? request.validate()) != nil, "accepted a request its own rules refuse")
        // resolve takes one order, cancel one or more (bulk cancel); both need a note.
        if request.operation == .resolve {
            invariant(request.orders.count == 1 && !(request.note ?? "").isEmpty, "resolve without one order and a note")
        }
        if request.operation == .cancel {
            invariant(!request.orders.isEmpty && !(request.note ?? "").isEmpty, "cancel without an order and a note")
        }
        // What reconcilectl would send for it is one line that reads back as the same request.
        let line = request.line
        invariant(!line.utf8.contains(0x0A), "a request line holds a newline")
        do {
            let again = try ControlRequest.parse(Array(line.utf8))
            invariant(again == request, "the request written out reads back differently")
        } catch {
            invariant(false, "the request written out is refused: \(error)")
        }
        // What the daemon hands to the store.
        let store = request.operatorRequest(actor: .operator("fuzz"))
        invariant((store != nil) == (request.operation.action != nil), "an operator request for \(request.operation)")
        invariant(request.operation.isWrite || store == nil, "a read operation changes orders")
        if let store, let action = request.operation.action {
            invariant(store.action == action && store.note == request.note, "the operator request lost fields")
            for state in OrderState.allCases {
                for usable in [true, false] {
                    _ = try? OrderLifecycle.next(
                        from: state, on: .operatorAction(action), context: OrderLifecycle.Context(resumeState: .pending, hasUsableProof: usable))
                }
            }
        }
    }

    /// The daemon answers a refused line with `ControlResponse.error(description)`: one line of
    /// JSON that says `ok: false` and carries the reason.
    static func checkRefusal(_ error: ControlRequest.Invalid) {
        let answer = ControlResponse.error(error.description)
        invariant(!answer.utf8.contains(0x0A), "an error answer spans lines")
        guard case .object(let object)? = try? JSONParser().parse(answer) else {
            invariant(false, "an error answer is not a JSON object: \(answer)")
            return
        }
        invariant(object["ok"] == .bool(false) && object["error"] == .string(error.description), "an error answer lost its reason")
    }
}
