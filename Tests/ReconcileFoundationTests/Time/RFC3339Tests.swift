import Foundation
import Testing
@testable import ReconcileFoundation

@Suite("RFC 3339")
struct RFC3339Tests {
    @Test(
        "parses valid forms",
        arguments: [
            ("1970-01-01T00:00:00Z", 0.0),
            ("2026-11-30T07:26:06Z", 1_796_023_566.0),
            ("2026-11-30t07:26:06z", 1_796_023_566.0),
            ("2026-11-30 07:26:06Z", 1_796_023_566.0),
            ("2026-11-30T08:26:06+01:00", 1_796_023_566.0),
            ("2026-11-29T23:26:06-08:00", 1_796_023_566.0),
            ("2026-11-30T07:26:06.250Z", 1_796_023_566.25),
            ("2024-02-29T12:00:00Z", 1_709_208_000.0),
            ("1969-12-31T23:59:59Z", -1.0),
        ])
    func valid(text: String, seconds: Double) {
        #expect(RFC3339.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test(
        "refuses invalid forms",
        arguments: ["", "2026-11-30", "2026-11-30T07:26:06", "2026-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
            "2026-11-30T24:00:00Z", "2026-11-30T07:26:06+0100", "2026-11-30T07:26:06.Z", "2026-11-30T07:26:06Zjunk",
            "x026-11-30T07:26:06Z"])
    func invalid(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test("formats in UTC with Z, optionally with milliseconds")
    func format() {
        #expect(RFC3339.format(Date(timeIntervalSince1970: 1_796_023_566.999)) == "2026-11-30T07:26:06Z")
        #expect(RFC3339.formatWithMilliseconds(Date(timeIntervalSince1970: 1_796_023_566.25)) == "2026-11-30T07:26:06.250Z")
        #expect(RFC3339.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        for seconds in stride(from: -100_000_000.0, to: 4_000_000_000.0, by: 86_399.5) {
            let date = Date(timeIntervalSince1970: seconds.rounded(.down))
            #expect(RFC3339.parse(RFC3339.format(date)) == date)
        }
    }
}
