import Foundation
import ReconcileCore
import Testing
@testable import ReconcileCLI

/// The man pages in `man/` (issue 27) keep up with the code: `reconciled.conf(5)` has an
/// `.It Cm Key=` entry under a `.Ss [Section]` heading for every key the configuration parser
/// knows (``ConfigurationKeys``) and no other; `reconcilectl(8)` has an `.It Cm verb` entry in
/// its COMMANDS list for every verb `reconcilectl` knows (``Reconcilectl/commands``), with an
/// `.It Fl` entry inside it for each of the verb's options; and `mandoc -T lint -W warning` finds nothing in any
/// page. Where mandoc is not installed the lint is skipped, unless `CI` is set.
@Suite("Man pages")
struct ManPageTests {
    static let pages = ["man/reconciled.8", "man/reconcilectl.8", "man/reconciled.conf.5"]

    // MARK: - Reading mdoc

    /// A macro line's words, the macro itself first without its dot (`.It Cm Directory= Ns Ar
    /// path` → `It Cm Directory= Ns Ar path`), double quotes removed; `nil` for a text line.
    static func macroWords(_ line: Substring) -> [String]? {
        guard line.hasPrefix(".") else { return nil }
        return line.dropFirst().split(whereSeparator: { $0 == " " || $0 == "\t" }).map { String($0).replacingOccurrences(of: "\"", with: "") }
    }

    /// The keys `reconciled.conf(5)` documents, as `Section.Key`: the `Cm Name=` words of `.It`
    /// lines, under the last `.Ss [Section]` heading (`?` before any, or after another heading).
    static func configurationKeys(inManPage text: String) -> Set<String> {
        var section = "?"
        var keys = Set<String>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let words = macroWords(line), let macro = words.first else { continue }
            if macro == "Sh" || macro == "Ss" {
                section = sectionName(words) ?? "?"
                continue
            }
            guard macro == "It" else { continue }
            for (index, word) in words.enumerated().dropFirst() where words[index - 1] == "Cm" && word.hasSuffix("=") {
                let name = word.dropLast()
                if !name.isEmpty, name.allSatisfy({ $0.isLetter }) { keys.insert("\(section).\(name)") }
            }
        }
        return keys
    }

    /// `Ss [Spool]` → `Spool`.
    static func sectionName(_ words: [String]) -> String? {
        guard words.first == "Ss", words.count == 2 else { return nil }
        let title = words[1]
        guard title.hasPrefix("["), title.hasSuffix("]") else { return nil }
        return String(title.dropFirst().dropLast())
    }

    /// The `.Ss [Section]` headings of `reconciled.conf(5)`, in page order.
    static func configurationSections(inManPage text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in macroWords(line).flatMap(sectionName) }
    }

    /// The verbs of `reconcilectl(8)`: the entries `.It Cm verb …` of the outermost list of its
    /// COMMANDS section, each with the options its nested lists describe: the words that follow
    /// `Fl` on their `.It` lines, without the dash (`.It Fl s , Fl -state Ar state` → `s`,
    /// `-state`). An option only in the verb's usage line has no entry, and does not count.
    static func verbs(inManPage text: String) -> [String: Set<String>] {
        var inCommands = false
        var depth = 0
        var verb: String?
        var verbs: [String: Set<String>] = [:]
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            guard let words = macroWords(line), let macro = words.first else { continue }
            switch macro {
            case "Sh":
                inCommands = words.dropFirst().joined(separator: " ") == "COMMANDS"
                depth = 0
                verb = nil
                continue
            case "Bl" where inCommands:
                depth += 1
            case "El" where inCommands:
                depth -= 1
            case "It" where inCommands && depth == 1:
                verb = words.count > 2 && words[1] == "Cm" ? words[2] : nil
                if let name = verb, verbs[name] == nil { verbs[name] = [] }
            default:
                break
            }
            guard let verb, inCommands, macro == "It", depth >= 2 else { continue }
            for (index, word) in words.enumerated().dropFirst() where words[index - 1] == "Fl" {
                verbs[verb, default: []].insert(word)
            }
        }
        return verbs
    }

    // MARK: - The checks

    /// What `reconciled.conf(5)`'s text lacks or has too many, compared with the parser.
    static func configurationProblems(_ text: String) -> [String] {
        let known = Set(ConfigurationKeys.names)
        let listed = configurationKeys(inManPage: text)
        var problems = known.subtracting(listed).sorted().map { "\($0): a key the parser knows is missing" }
        problems += listed.subtracting(known).sorted().map { "\($0): not a key the parser knows" }
        let sections = configurationSections(inManPage: text)
        problems += ConfigurationKeys.sectionOrder.filter { !sections.contains($0) }.map { "[\($0)]: a section the parser knows has no .Ss heading" }
        problems += sections.filter { !ConfigurationKeys.sectionOrder.contains($0) }.map { "[\($0)]: not a section the parser knows" }
        return problems
    }

    /// What `reconcilectl(8)`'s text lacks or has too many, compared with `commands`.
    static func commandProblems(_ text: String, commands: [CommandSpec] = Reconcilectl.commands) -> [String] {
        let documented = verbs(inManPage: text)
        var problems: [String] = []
        for command in commands {
            guard let flags = documented[command.name] else {
                problems.append("\(command.name): a verb reconcilectl knows is missing")
                continue
            }
            for option in command.options {
                if !flags.contains("-" + option.long) { problems.append("\(command.name): --\(option.long) is missing") }
                if let short = option.short, !flags.contains(String(short)) { problems.append("\(command.name): -\(short) is missing") }
            }
        }
        let names = Set(commands.map(\.name))
        problems += documented.keys.filter { !names.contains($0) }.sorted().map { "\($0): not a verb reconcilectl knows" }
        return problems
    }

    // MARK: - mandoc

    /// mandoc, from `PATH` (or Debian's place for it); `nil` when it is not installed.
    static var mandoc: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let folders = path.split(separator: ":").map(String.init) + ["/usr/bin"]
        return folders.map { $0 + "/mandoc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Whether the lint runs: mandoc is there, or CI is set (where its absence is a failure).
    static var lintRuns: Bool { mandoc != nil || ProcessInfo.processInfo.environment["CI"] != nil }

    /// `mandoc -T lint -W warning FILE`: its exit status and everything it printed.
    static func lint(_ file: String) throws -> (status: Int32, output: String) {
        let mandoc = try #require(Self.mandoc, "mandoc is not installed, and CI is set: .ci/deps installs it (apt-get install mandoc)")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: mandoc)
        process.arguments = ["-T", "lint", "-W", "warning", file]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }

    /// Writes `text` to a new temporary file named `name` and returns its path.
    static func temporaryCopy(_ text: String, named name: String) throws -> String {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ManPageTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    // MARK: - Tests

    @Test("reconciled.conf(5) has every section and key the configuration parser knows, and no other")
    func configurationPage() throws {
        let text = try DocumentationTests.read("man/reconciled.conf.5")
        #expect(Self.configurationKeys(inManPage: text).count > 50, "the reader found too few keys")
        #expect(Self.configurationProblems(text) == [])
    }

    @Test("reconcilectl(8) has every verb reconcilectl knows, each with every option it takes, and no other")
    func commandPage() throws {
        let text = try DocumentationTests.read("man/reconcilectl.8")
        #expect(Reconcilectl.commands.count >= 15, "only \(Reconcilectl.commands.map(\.name)) in the code")
        #expect(Self.commandProblems(text) == [])
    }

    @Test(
        "mandoc -T lint -W warning finds nothing in any man page",
        .enabled(if: lintRuns, "mandoc is not installed (apt-get install mandoc); with CI set this fails instead"))
    func lintClean() throws {
        for page in Self.pages {
            let result = try Self.lint(DocumentationTests.root + "/" + page)
            #expect(result.status == 0, "\(page): mandoc exited \(result.status)")
            #expect(result.output == "", "\(page)")
        }
    }

    @Test(
        "mandoc's lint notices a page with a list left open",
        .enabled(if: lintRuns, "mandoc is not installed (apt-get install mandoc); with CI set this fails instead"))
    func lintNotices() throws {
        let text = try DocumentationTests.read("man/reconcilectl.8")
        let end = try #require(text.range(of: "\n.El\n"))
        let broken = try Self.temporaryCopy(text.replacingCharacters(in: end, with: "\n"), named: "reconcilectl.8")
        defer { try? FileManager.default.removeItem(atPath: (broken as NSString).deletingLastPathComponent) }
        let result = try Self.lint(broken)
        #expect(result.status != 0)
        #expect(result.output.contains("reconcilectl.8:"), "mandoc said: \(result.output)")
    }

    @Test("the readers notice: a key, a section, a verb or an option taken out of a copy of a page is reported")
    func readersWork() throws {
        // The readers on small samples.
        let configuration = """
            .Sh DESCRIPTION
            .It Cm Early= Ns Ar x
            .Ss [Spool]
            .Bl -tag -width Ds
            .It Cm Directory= Ns Ar path
            prose naming
            .Cm MaxFileSize=
            .It Cm RescanInterval= Ns Ar span , Cm Other= Ns Ar x
            .El
            .Ss Values
            .It Cm Later= Ns Ar x
            """
        #expect(Self.configurationKeys(inManPage: configuration) == ["?.Early", "Spool.Directory", "Spool.RescanInterval", "Spool.Other", "?.Later"])
        #expect(Self.configurationSections(inManPage: configuration) == ["Spool"])
        let commands = """
            .Sh DESCRIPTION
            .Bl -tag -width Ds
            .It Cm outside
            .El
            .Sh COMMANDS
            .Bl -tag -width Ds
            .It Cm status Op Fl -json
            .Bl -tag -width Ds
            .It Fl q , Fl -quiet
            .It Cm nested
            .El
            .It Cm list Oo Fl s Ar state Oc
            .El
            .Sh EXIT STATUS
            """
        #expect(Self.verbs(inManPage: commands) == ["status": ["q", "-quiet"], "list": []])

        // A key and a section taken out of the real reconciled.conf(5), and one the parser does
        // not know put in, are reported.
        let page = try DocumentationTests.read("man/reconciled.conf.5")
        let lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let withoutKey = lines.filter { !$0.hasPrefix(".It Cm MaxFileSize=") }.joined(separator: "\n")
        #expect(Self.configurationProblems(withoutKey) == ["Spool.MaxFileSize: a key the parser knows is missing"])
        let withExtra = page.replacingOccurrences(of: ".It Cm MaxFileSize=", with: ".It Cm MaxFileSizes= Ns Ar size\n.It Cm MaxFileSize=")
        #expect(Self.configurationProblems(withExtra) == ["Spool.MaxFileSizes: not a key the parser knows"])
        let withoutSection = page.replacingOccurrences(of: ".Ss [Control]\n", with: "")
        #expect(Self.configurationProblems(withoutSection).contains("[Control]: a section the parser knows has no .Ss heading"))

        // A verb and an option taken out of the real reconcilectl(8) are reported.
        let manual = try DocumentationTests.read("man/reconcilectl.8")
        let manualLines = manual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let withoutVerb = manualLines.filter { !$0.hasPrefix(".It Cm backup") }.joined(separator: "\n")
        #expect(Self.commandProblems(withoutVerb) == ["backup: a verb reconcilectl knows is missing"])
        let withoutOption = manualLines.filter { !$0.hasPrefix(".It Fl -reset-attempts") }.joined(separator: "\n")
        #expect(Self.commandProblems(withoutOption) == ["retry: --reset-attempts is missing"])
        let withExtraVerb = manual.replacingOccurrences(of: ".It Cm backup", with: ".It Cm backups Ar file\nText.\n.It Cm backup")
        #expect(Self.commandProblems(withExtraVerb) == ["backups: not a verb reconcilectl knows"])
    }
}
