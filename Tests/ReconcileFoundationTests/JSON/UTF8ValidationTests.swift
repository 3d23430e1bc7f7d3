import Testing
@testable import ReconcileFoundation

@Suite("UTF-8 validation")
struct UTF8ValidationTests {
    @Test("accepts well-formed text of every length")
    func valid() {
        #expect(UTF8Validation.firstInvalidOffset(in: Array("a é ☃ 😀".utf8)) == nil)
        #expect(UTF8Validation.firstInvalidOffset(in: [UInt8]()) == nil)
    }

    @Test(
        "finds the first bad byte",
        arguments: [
            ([0x61, 0xFF], 1),  // never valid
            ([0x61, 0x62, 0xC3], 2),  // truncated
            ([0xC0, 0x80], 0),  // overlong NUL
            ([0xE0, 0x80, 0x80], 0),  // overlong
            ([0xED, 0xA0, 0x80], 0),  // surrogate
            ([0xF4, 0x90, 0x80, 0x80], 0),  // above U+10FFFF
            ([0x80], 0),  // lone continuation
        ] as [([UInt8], Int)])
    func invalid(bytes: [UInt8], offset: Int) {
        #expect(UTF8Validation.firstInvalidOffset(in: bytes) == offset)
    }
}
