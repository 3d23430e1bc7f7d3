import Testing
@testable import ReconcileFoundation

@Suite("JSON writer")
struct JSONWriterTests {
    /// The writer as it was, scalar by scalar: what the byte writer must produce exactly.
    static func reference(_ text: String) -> String {
        var output = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        return output + "\""
    }

    @Test("escapes quotes, backslashes, control characters, DEL and the two Unicode line ends; copies the rest")
    func escapes() {
        let cases: [(String, String)] = [
            ("", #""""#),
            ("plain", #""plain""#),
            ("a\"b\\c", #""a\"b\\c""#),
            ("\n\r\t\u{0}\u{1f}\u{7f}", #""\n\r\t\u0000\u001f\u007f""#),
            ("x\u{2028}y\u{2029}z", #""x\u2028y\u2029z""#),
            ("é ☃ 😀 \u{2027}\u{202a}", "\"é ☃ 😀 \u{2027}\u{202a}\""),
            ("\u{2028}", #""\u2028""#),
            ("end\u{2029}", #""end\u2029""#),
        ]
        for (text, expected) in cases {
            var bytes: [UInt8] = []
            JSONWriter.writeString(text, into: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == expected)
            #expect(JSONWriter.string(.string(text)) == expected)
            #expect(Self.reference(text) == expected)
        }
    }

    @Test("random strings: the same text as the scalar-by-scalar writer, and they parse back")
    func randomStrings() throws {
        var random = SeededRandomSource(seed: 18)
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", "\"", "\\", "/", "\n", "\u{0}", "\u{1b}", "\u{7f}", "\u{80}", "é", "\u{2028}", "\u{2029}", "\u{2027}", "☃", "😀", "\u{e2}"]
        for _ in 0..<2_000 {
            var text = ""
            for _ in 0..<Int.random(in: 0...24, using: &random) { text.unicodeScalars.append(alphabet.randomElement(using: &random)!) }
            let written = JSONWriter.string(.string(text))
            #expect(written == Self.reference(text), "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
            #expect(try JSONParser().parse(written) == .string(text))
        }
    }

    @Test("objects, arrays and scalars; bytes and text agree")
    func documents() throws {
        let value = JSONValue.object(JSONObject([
            "order_id": .string("A1"), "n": .number("-12.5e3"), "ok": .bool(true), "no": .bool(false), "none": .null,
            "list": .array([.number("1"), .string("x\"y"), .array([]), .object(JSONObject())]),
        ]))
        let text = #"{"order_id":"A1","n":-12.5e3,"ok":true,"no":false,"none":null,"list":[1,"x\"y",[],{}]}"#
        #expect(JSONWriter.string(value) == text)
        #expect(JSONWriter.bytes(value) == Array(text.utf8))
        #expect(try JSONParser().parse(text) == value)
    }
}
