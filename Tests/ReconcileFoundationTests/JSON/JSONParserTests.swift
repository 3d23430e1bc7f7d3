import Testing
@testable import ReconcileFoundation

@Suite("JSON parser")
struct JSONParserTests {
    let parser = JSONParser()

    @Test("parses every value kind and keeps member order")
    func values() throws {
        let value = try parser.parse(#"{"b": [1, -2.5e3, true, false, null], "a": "x\u00e9\n", "c": {}}"#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["b", "a", "c"])
        #expect(value["b"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .bool(false), .null]))
        #expect(value["a"] == .string("xé\n"))
        #expect(value["c"] == .object(JSONObject()))
    }

    @Test("keeps big numbers exactly as written")
    func bigNumbers() throws {
        let value = try parser.parse(#"{"transaction_id": 1000000118990828123456789}"#)
        #expect(value["transaction_id"]?.numberText == "1000000118990828123456789")
        #expect(value["transaction_id"]?.stringOrNumberText == "1000000118990828123456789")
        #expect(value["transaction_id"]?.int64Value == nil)
        #expect(try parser.parse("42").int64Value == 42)
    }

    @Test("decodes surrogate pairs and escapes")
    func escapes() throws {
        #expect(try parser.parse(#""\ud83d\ude00 \/ \\ \" \b\f\r\t""#) == .string("😀 / \\ \" \u{8}\u{c}\r\t"))
        #expect(try parser.parse("\"snow ☃ and 😀\"") == .string("snow ☃ and 😀"))
    }

    @Test(
        "refuses invalid documents with a position",
        arguments: [
            ("", "empty document", 1, 1),
            ("   ", "no JSON value, only whitespace", 1, 4),
            (" \n ", "no JSON value, only whitespace", 2, 2),
            ("{\"a\": 1,", "unexpected end of input inside an object", 1, 9),
            ("{\"a\" 1}", "expected ':' after key \"a\", found '1'", 1, 6),
            ("{\"a\": tru}", "invalid literal, expected 'true'", 1, 7),
            ("[1,2", "unexpected end of input inside an array", 1, 5),
            ("[1 2]", "expected ',' or ']' after an array element, found '2'", 1, 4),
            ("{} x", "unexpected 'x' after the JSON value", 1, 4),
            ("{\n  \"a\": 01\n}", "a number may not have a leading zero", 2, 8),
            ("[1.]", "a number needs a digit after '.'", 1, 4),
            ("[-]", "a number needs a digit after '-'", 1, 3),
            ("[1e]", "a number needs a digit in its exponent", 1, 4),
            ("\"abc", "unterminated string", 1, 1),
            ("\"a\u{1}b\"", "control character 0x01 must be escaped in a string", 1, 3),
            ("\"\\x\"", "invalid escape sequence '\\x'", 1, 2),
            ("\"\\u12g4\"", "invalid hex digit in \\u escape", 1, 6),
            ("\"\\ud800\"", "lone high surrogate in \\u escape", 1, 2),
            ("\"\\udc00\"", "lone low surrogate in \\u escape", 1, 2),
            ("{\"a\":1,\"a\":2}", "duplicate key \"a\"", 1, 8),
            ("{1:2}", "expected a string key, found '1'", 1, 2),
            ("[,]", "unexpected ',', expected a value", 1, 2),
        ])
    func invalid(text: String, message: String, line: Int, column: Int) {
        #expect(throws: JSONParseError.self) { try parser.parse(text) }
        do {
            _ = try parser.parse(text)
        } catch {
            #expect(error.message == message)
            #expect(error.line == line)
            #expect(error.column == column)
        }
    }

    @Test("refuses invalid UTF-8 inside strings and a byte order mark")
    func invalidUTF8() {
        #expect(throws: JSONParseError.self) { try parser.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONParseError.self) { try parser.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // encoded surrogate
        #expect(throws: JSONParseError.self) { try parser.parse([0x22, 0xC0, 0xAF, 0x22]) }  // overlong
        #expect(throws: JSONParseError.self) { try parser.parse([0xEF, 0xBB, 0xBF, 0x7B, 0x7D]) }
    }

    @Test("bounds nesting depth")
    func depth() throws {
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try parser.parse(deep) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        _ = try parser.parse(fine)
        #expect(throws: JSONParseError.self) { try parser.parse(String(repeating: "[", count: 100_000)) }
    }

    @Test("allows duplicate keys only when asked")
    func duplicates() throws {
        let lenient = JSONParser(allowsDuplicateKeys: true)
        #expect(try lenient.parse(#"{"a":1,"a":2}"#).objectValue?.members.count == 2)
    }

    @Test("writer output parses back to the same value")
    func roundTrip() throws {
        let original = try parser.parse(#"{"k":"quote \" slash \\ tab \t nl \n ctrl \u0001 del \u007f ☃","n":[1,2.5,-3e2],"z":null}"#)
        let text = JSONWriter.string(original)
        #expect(try parser.parse(text) == original)
        #expect(text.contains("\\u0001"))
        #expect(!text.contains("\n"))
    }

    @Test("JSONObject keeps order on update and removal")
    func objectMutation() {
        var object = JSONObject(["a": .integer(1), "b": nil, "c": .string("x")])
        #expect(object.keys == ["a", "c"])
        object["a"] = .integer(2)
        object["d"] = .bool(true)
        object["c"] = nil
        #expect(object.keys == ["a", "d"])
        #expect(object["a"] == .number("2"))
    }
}
