import Testing
@testable import ReconcileHTTP

@Suite("Header lines as libcurl hands them over")
struct HeaderLineTests {
    func parse(_ line: String) -> (String, String)? {
        let bytes = Array(line.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            guard let colon = buffer.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            return (HeaderLine.name(buffer[..<colon]), HeaderLine.value(buffer[(colon + 1)...]))
        }
    }

    @Test("the name lower-cased (ASCII only), the value without the spaces, tabs, CR and LF around it; inner spaces and other bytes kept")
    func parts() {
        #expect(parse("Content-Type: application/json\r\n")! == ("content-type", "application/json"))
        #expect(parse("Retry-After:\t 120 \t\r\n")! == ("retry-after", "120"))
        #expect(parse("X-Empty:\r\n")! == ("x-empty", ""))
        #expect(parse("X-Words:  a  b  \r\n")! == ("x-words", "a  b"))
        #expect(parse("X-Ünï: café\r\n")! == ("x-Ünï", "café"))
        #expect(parse("Location: http://h/a:b\r\n")! == ("location", "http://h/a:b"))
    }
}
