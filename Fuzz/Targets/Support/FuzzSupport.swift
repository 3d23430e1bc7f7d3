// Shared by every fuzz target (scripts/fuzz compiles this file into each one).
import Foundation
import ReconcileCore
import ReconcileFoundation

/// Stops the run when an invariant does not hold. libFuzzer takes the trap for a crash and
/// saves the input (`crash-<sha1>`), so a broken promise is reported like a memory error.
func invariant(
    _ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String, file: StaticString = #fileID, line: UInt = #line
) {
    if !condition() {
        fatalError("invariant broken: \(message())", file: file, line: line)
    }
}

/// The input as an array, for the parsers' `some Collection<UInt8>` entry points.
func inputBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Cuts an input into parts at every 0xFF byte. 0xFF never occurs in UTF-8, so no text the
/// parsers could accept is lost by using it to pack several documents into one input.
func splitAtFF(_ bytes: [UInt8]) -> [[UInt8]] {
    bytes.split(separator: 0xFF, omittingEmptySubsequences: false).map(Array.init)
}

/// Foundation's JSONSerialization as an independent judge of what a body says. It is a
/// different parser from ``JSONParser``: where ours accepts and decides, it must agree.
enum FoundationJSON {
    static func parse(_ bytes: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
    }

    /// The top-level object, or `nil` when the body is not one.
    static func object(_ bytes: [UInt8]) -> [String: Any]? {
        parse(bytes) as? [String: Any]
    }

    /// Whether Foundation can judge `bytes`: it refuses a document with a number beyond
    /// Double (`1e999`), whose text our parser keeps as it is.
    static func canJudge(_ bytes: [UInt8]) -> Bool {
        guard let value = try? JSONParser(allowsDuplicateKeys: true).parse(bytes) else { return false }
        return !hasHugeNumber(value)
    }

    static func hasHugeNumber(_ value: JSONValue) -> Bool {
        switch value {
        case .number(let text): !(Double(text)?.isFinite ?? false)
        case .array(let elements): elements.contains(where: hasHugeNumber)
        case .object(let object): object.members.contains { hasHugeNumber($0.value) }
        default: false
        }
    }
}

/// How many times `key` appears among the members of the top-level object (0 when the text is
/// not an object). A decisive key named twice makes an answer ambiguous.
func topLevelCount(of key: String, in bytes: [UInt8]) -> Int {
    guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(bytes) else { return 0 }
    return object.members.count { $0.key == key }
}

/// Whether `text` holds a character that would break a one-line log entry or reason file.
func hasLineBreak(_ text: String) -> Bool {
    text.unicodeScalars.contains { $0 == "\n" || $0 == "\r" }
}

/// Whether a reason's printed form (`code: detail`) would break a one-line log entry.
func hasLineBreak(_ reason: Reason) -> Bool {
    hasLineBreak(reason.description)
}

/// Deterministic "random" draws for the retry arithmetic: the ends and the middle of [0, 1).
struct FixedRandom: RandomSource {
    var value: Double
    mutating func nextUnit() -> Double { value }
}
