import Testing
@testable import ReconcileSpool

@Suite("Spool file names (bytes)")
struct SpoolFileNameTests {
    @Test("equality, hashing and order are by bytes: NFC and NFD are two names")
    func bytes() {
        let nfc = SpoolFileName("caf\u{E9}.json")
        let nfd = SpoolFileName("cafe\u{301}.json")
        #expect("caf\u{E9}.json" == "cafe\u{301}.json", "Swift's String equality is canonical")
        #expect(nfc != nfd)
        #expect(Set([nfc, nfd, nfc]).count == 2)
        #expect([SpoolFileName("b"), SpoolFileName([0xFF]), SpoolFileName("a")].sorted() == [SpoolFileName("a"), SpoolFileName("b"), SpoolFileName([0xFF])])
    }

    @Test("the documented rule: names starting with . or ending in .tmp are ignored")
    func candidates() {
        #expect(SpoolFileName("A1001.json").isCandidate)
        #expect(SpoolFileName([0xFF, 0xFE]).isCandidate)
        #expect(!SpoolFileName(".A1001.json").isCandidate)
        #expect(!SpoolFileName("A1001.json.tmp").isCandidate)
        #expect(SpoolFileName("A1001.json.TMP").isCandidate)
        #expect(!SpoolFileName("").isCandidate)
        #expect(!SpoolFileName("a/b").isCandidate)
        #expect(!SpoolFileName(String(repeating: "a", count: 256)).isCandidate)
    }

    @Test("escaped for people: control characters, C1, bidi overrides and bytes that are not UTF-8; reversible")
    func escaping() {
        let cases: [([UInt8], String)] = [
            (Array("order-17.json".utf8), "order-17.json"),
            (Array("café ✓.json".utf8), "café ✓.json"),
            (Array("a\nb\rc\td".utf8), #"a\nb\rc\td"#),
            (Array("\u{1B}[31mred".utf8), #"\x1b[31mred"#),
            (Array("x\u{7F}\u{9B}y".utf8), #"x\x7f\u{9b}y"#),
            (Array("evil\u{202E}nosj.exe".utf8), #"evil\u{202e}nosj.exe"#),
            (Array(#"back\slash"#.utf8), #"back\\slash"#),
            ([0x62, 0xFF, 0xC3, 0x28, 0xE2, 0x82], #"b\xff\xc3(\xe2\x82"#),
        ]
        for (bytes, shown) in cases {
            let name = SpoolFileName(bytes)
            #expect(name.escaped == shown)
            #expect(SpoolFileName(escaped: shown) == name, "\(shown) does not read back")
            #expect(!name.escaped.unicodeScalars.contains { SpoolFileName.needsEscape($0) })
        }
        #expect(SpoolFileName(escaped: #"\q"#) == nil)
        #expect(SpoolFileName(escaped: #"\x4"#) == nil)
        #expect(SpoolFileName(escaped: #"\x41"#) == nil, "A is never escaped, so this is not an escaped name")
    }

    @Test("as a C string, the bytes unchanged")
    func cString() {
        let name = SpoolFileName([0x61, 0xFF, 0x62])
        #expect(name.withCString { pointer in (0..<3).map { UInt8(bitPattern: pointer[$0]) } } == [0x61, 0xFF, 0x62])
        #expect(name.withCString { $0[3] } == 0)
    }
}
