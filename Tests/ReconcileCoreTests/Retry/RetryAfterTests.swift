import Foundation
import Testing
@testable import ReconcileCore

@Suite("Retry-After and HTTP dates")
struct RetryAfterTests {
    let now = Date(timeIntervalSince1970: 1_796_023_566)  // 2026-11-30T07:26:06Z

    @Test("delta-seconds")
    func seconds() {
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse(" 0 ", now: now) == .seconds(0))
    }

    @Test("an HTTP date in each of its three forms")
    func dates() {
        #expect(RetryAfter.parse("Mon, 30 Nov 2026 07:27:06 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Monday, 30-Nov-26 07:27:06 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Mon Nov 30 07:27:06 2026", now: now) == .seconds(60))
        #expect(RetryAfter.parse("Mon, 30 Nov 2026 07:00:00 GMT", now: now) == .zero)
    }

    @Test("epoch milliseconds, as the App Store Server API sends them")
    func epochMilliseconds() {
        #expect(RetryAfter.parse("1796023596000", now: now) == .seconds(30))
    }

    @Test("nonsense is nil", arguments: ["soon", "", "-5", "1.5", "Mon, 99 Nov 2026 07:27:06 GMT", "30 s"])
    func invalid(text: String) {
        #expect(RetryAfter.parse(text, now: now) == nil)
    }

    @Test("formats IMF-fixdate")
    func format() {
        #expect(HTTPDate.format(now) == "Mon, 30 Nov 2026 07:26:06 GMT")
        #expect(HTTPDate.parse(HTTPDate.format(now)) == now)
    }
}
