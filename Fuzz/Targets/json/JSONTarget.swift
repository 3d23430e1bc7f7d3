// Fuzz target: the JSON parser every other parser stands on, with the writer the daemon answers
// with (control socket, metrics of requests to verifiers), against Foundation's parser.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    JSONTarget.run(inputBytes(data, size))
    return 0
}

enum JSONTarget {
    static func run(_ bytes: [UInt8]) {
        let strict = result { () throws(JSONParseError) in try JSONParser().parse(bytes) }
        let lenient = result { () throws(JSONParseError) in try JSONParser(allowsDuplicateKeys: true).parse(bytes) }
        let shallow = result { () throws(JSONParseError) in try JSONParser(maximumDepth: 8).parse(bytes) }

        for case .failure(let error) in [strict, lenient, shallow] {
            invariant((0...bytes.count).contains(error.offset), "error offset \(error.offset) outside the input")
            invariant(error.line >= 1 && error.column >= 1, "error position \(error.line):\(error.column)")
            invariant(!hasLineBreak(error.description), "error message spans lines: \(error.description)")
        }
        if case .success(let value) = strict {
            invariant(lenient == strict, "allowing duplicate keys changed a document without any")
            check(value, bytes)
        }
        if case .success(let value) = shallow {
            invariant(depth(value) <= 8, "maximumDepth 8 let through depth \(depth(value))")
            invariant(strict == shallow, "a depth limit changed the value")
        }
        if case .success(let value) = lenient {
            check(value, bytes)
        }
    }

    static func check(_ value: JSONValue, _ bytes: [UInt8]) {
        invariant(String(validating: bytes, as: UTF8.self) != nil, "accepted a text that is not UTF-8")
        // The writer's output is one line (the control protocol frames answers by newlines), and
        // reads back as the same value.
        let written = JSONWriter.bytes(value)
        invariant(!written.contains(0x0A) && !written.contains(0x0D), "the writer wrote a line break")
        invariant(!written.contains(where: { $0 < 0x20 }), "the writer wrote a raw control character")
        do {
            let again = try JSONParser(allowsDuplicateKeys: true).parse(written)
            invariant(again == value, "the written value reads back differently")
        } catch {
            invariant(false, "the writer's output does not parse: \(error)")
        }
        // Foundation agrees that it is JSON, where it can represent the numbers.
        if !FoundationJSON.hasHugeNumber(value) {
            invariant(FoundationJSON.parse(bytes) != nil, "Foundation refuses a document we accept")
        }
    }

    static func result(_ body: () throws(JSONParseError) -> JSONValue) -> Result<JSONValue, JSONParseError> {
        do throws(JSONParseError) {
            return .success(try body())
        } catch {
            return .failure(error)
        }
    }

    static func depth(_ value: JSONValue) -> Int {
        switch value {
        case .array(let elements): 1 + (elements.map(depth).max() ?? 0)
        case .object(let object): 1 + (object.members.map { depth($0.value) }.max() ?? 0)
        default: 0
        }
    }
}
