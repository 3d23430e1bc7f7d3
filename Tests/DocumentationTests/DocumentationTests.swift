import Foundation
import Testing

/// The design of record lives in `docs/` (issue 25): every `§` the code and the pages cite names
/// a section that is there, every relative link in the README and the pages leads somewhere, and
/// the README stays a short read.
@Suite("Documentation")
struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Where citations are looked for, and which files there are text to read.
    static let citingFolders = ["Sources", "Tests", "Fuzz", "scripts", "docs", "systemd", "etc"]
    static let textExtensions: Set<String> = ["swift", "md", "sh", "sql", "conf", "catalog", "service", "c", "h", ""]

    static func read(_ relative: String) throws -> String {
        try String(contentsOfFile: root + "/" + relative, encoding: .utf8)
    }

    /// Files under `folder`, relative to the root, test fixtures left out (they are copies of
    /// outside documents, with outside citations).
    static func files(under folder: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root + "/" + folder) else { return [] }
        var found: [String] = []
        while let entry = walker.nextObject() as? String {
            let path = folder + "/" + entry
            if path.contains("/Fixtures/") || path.contains("/Snapshots/") { continue }
            // These tests' own samples cite sections that do not exist, on purpose.
            if path.hasPrefix("Tests/DocumentationTests/") { continue }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            if textExtensions.contains((path as NSString).pathExtension) { found.append(path) }
        }
        return found.sorted()
    }

    /// The pages: the README and everything under `docs/`.
    static var pages: [String] { ["README.md"] + files(under: "docs").filter { $0.hasSuffix(".md") } }

    /// The page a citation in `file` names, relative to the root.
    static func page(of citation: SectionCitation, in file: String) throws -> String {
        switch citation.document {
        case "DESIGN"?:
            return "docs/design.md"
        case let path?:
            let besides = ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(path)
            return FileManager.default.fileExists(atPath: root + "/" + besides) ? besides : path
        case nil:
            // A bare `§` in a page with numbered sections is that page's own.
            if file.hasPrefix("docs/"), file.hasSuffix(".md"), !MarkdownPage(try read(file)).sections.isEmpty { return file }
            return "docs/design.md"
        }
    }

    @Test("every § the code and the pages cite is a section of a page in docs/")
    func citationsResolve() throws {
        var pages: [String: MarkdownPage] = [:]
        var problems: [String] = []
        var checked = 0
        for file in Self.citingFolders.flatMap(Self.files(under:)) + ["Package.swift", "README.md"] {
            guard let text = try? Self.read(file) else { continue }
            for citation in SectionCitation.scan(text) where !citation.isExternal {
                let target = try Self.page(of: citation, in: file)
                if pages[target] == nil, let text = try? Self.read(target) { pages[target] = MarkdownPage(text) }
                guard let page = pages[target] else {
                    problems.append("\(file):\(citation.line): cites \(citation.document ?? "§") §\(citation.section), but \(target) is not in the repository")
                    continue
                }
                checked += 1
                if !page.sections.contains(citation.section) {
                    problems.append("\(file):\(citation.line): cites §\(citation.section) of \(target), which has no such section")
                }
            }
        }
        #expect(problems == [])
        // The code cites the design a few hundred times: finding far fewer means the scanner broke.
        #expect(checked > 200, "only \(checked) citations found")
    }

    @Test("every relative link in the README and docs/ leads to a file, and its anchor to a heading")
    func linksResolve() throws {
        var problems: [String] = []
        var checked = 0
        for file in Self.pages {
            let page = MarkdownPage(try Self.read(file))
            let folder = (file as NSString).deletingLastPathComponent
            for link in page.links {
                checked += 1
                let target = link.path.isEmpty ? file : (folder as NSString).appendingPathComponent(link.path)
                let normalized = (target as NSString).standardizingPath
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: Self.root + "/" + normalized, isDirectory: &isDirectory) else {
                    problems.append("\(file):\(link.line): \(link.path) does not exist")
                    continue
                }
                guard let anchor = link.anchor else { continue }
                guard normalized.hasSuffix(".md"), !isDirectory.boolValue else {
                    problems.append("\(file):\(link.line): an anchor into \(link.path), which is not a page")
                    continue
                }
                if !MarkdownPage(try Self.read(normalized)).anchors.contains(anchor) {
                    problems.append("\(file):\(link.line): \(normalized) has no heading #\(anchor)")
                }
            }
        }
        #expect(problems == [])
        #expect(checked > 50, "only \(checked) links found")
    }

    @Test("the README is a ten-minute read (at most 2,000 words) and points into docs/")
    func readmeIsShort() throws {
        let readme = try Self.read("README.md")
        let words = readme.split { $0 == " " || $0 == "\n" }.count
        #expect(words <= 2_000, "the README has \(words) words")
        #expect(MarkdownPage(readme).links.contains { $0.path == "docs/README.md" })
    }

    @Test("the readers find what they should, and a citation or link that is wrong is noticed")
    func readersWork() throws {
        let source = """
            /// Rules (DESIGN §5a; `docs/protocols/apple.md` §1.2–1.4, §2) and RFC 9110 §10.2.3.
            /// Broken over lines (DESIGN
            /// §7), bare §4, and §99.
            """
        #expect(SectionCitation.scan(source) == [
            SectionCitation(document: "DESIGN", section: "5a", line: 1),
            SectionCitation(document: "docs/protocols/apple.md", section: "1.2", line: 1),
            SectionCitation(document: "docs/protocols/apple.md", section: "2", line: 1),
            SectionCitation(document: "RFC 9110", section: "10.2.3", line: 1),
            SectionCitation(document: "DESIGN", section: "7", line: 3),
            SectionCitation(document: nil, section: "4", line: 3),
            SectionCitation(document: nil, section: "99", line: 3),
        ])
        let design = MarkdownPage(try Self.read("docs/design.md"))
        #expect(design.sections.isSuperset(of: ["1", "4", "5", "5a", "7", "10"]))
        #expect(!design.sections.contains("99"))

        let page = MarkdownPage("""
            # Title
            ## §2.3 Errors: `errorCode`
            See [there](other.md#a-b), [here](#title), [out](https://example.com/x).
            ```
            [not a link](nowhere.md)
            ## not a heading
            ```
            ## Title
            """)
        #expect(page.sections == ["2.3"])
        #expect(page.anchors == ["title", "23-errors-errorcode", "title-1"])
        #expect(page.links == [
            MarkdownPage.Link(path: "other.md", anchor: "a-b", line: 3), MarkdownPage.Link(path: "", anchor: "title", line: 3),
        ])
    }
}
