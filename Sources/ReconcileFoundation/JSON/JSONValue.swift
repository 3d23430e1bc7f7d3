/// A parsed JSON document, kept exactly as written.
///
/// Numbers keep their literal text so that a 20-digit transaction id is never rounded through a
/// `Double`, and objects keep their members in document order so that output is stable.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number, as its literal text (`-12.5e3`).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type's name, for error messages ("string", "number", …).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The number's literal text.
    public var numberText: String? {
        if case .number(let text) = self { return text }
        return nil
    }

    /// The value as a whole number, from a number literal without fraction or exponent.
    public var int64Value: Int64? {
        if case .number(let text) = self { return Int64(text) }
        return nil
    }

    /// A string or a number literal as text: Apple sends ids either way.
    public var stringOrNumberText: String? {
        switch self {
        case .string(let value): value
        case .number(let text): text
        default: nil
        }
    }

    /// Member lookup on an object; `nil` for a missing key or a value that is not an object.
    public subscript(key: String) -> JSONValue? {
        objectValue?[key]
    }
}

/// A JSON object: members in document order, keys unique.
public struct JSONObject: Sendable, Hashable {
    /// One `"key": value` pair.
    public struct Member: Sendable, Hashable {
        public var key: String
        public var value: JSONValue

        public init(key: String, value: JSONValue) {
            self.key = key
            self.value = value
        }
    }

    public private(set) var members: [Member]

    public init(_ members: [Member] = []) {
        self.members = members
    }

    /// Builds an object from literal pairs, in order; `nil` values are left out.
    public init(_ pairs: KeyValuePairs<String, JSONValue?>) {
        self.members = pairs.compactMap { key, value in value.map { Member(key: key, value: $0) } }
    }

    public var keys: [String] { members.map(\.key) }

    public var isEmpty: Bool { members.isEmpty }

    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key == key }?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append(Member(key: key, value: newValue))
            }
        }
    }
}

extension JSONValue {
    /// A JSON string, or `null` for `nil`.
    public static func string(orNull value: String?) -> JSONValue {
        value.map(JSONValue.string) ?? .null
    }

    /// A JSON number from an integer.
    public static func integer<T: BinaryInteger>(_ value: T) -> JSONValue {
        .number(String(value))
    }
}
