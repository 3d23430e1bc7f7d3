import Foundation
import Glibc
import ReconcileCore
import Testing
import TestSupport

/// The bash completion (`etc/bash-completion/reconcilectl`) in a scripted bash session, calling
/// the built `reconcilectl` on a store the built `reconciled` filled.
@Suite("End to end: bash completion", .serialized)
struct CompletionEndToEndTests {
    @Test("verbs, options, states, groupings, files and the store's order ids by prefix complete in bash")
    func bashSession() async throws {
        let harness = Harness("completion")
        try await harness.startMock()
        harness.configure(
            """
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            MaxRate=infinity
            """)
        for id in ["A1", "A2", "B1"] { harness.dropOrder(id) }
        let daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 3), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        harness.directory.write("order-1.json", "{}")

        // Each `t WORDS…` completes the last word as bash would on TAB and prints
        // "WORDS|CANDIDATES" on one line.
        let script = """
            set -u
            source '\(Fixtures.repositoryRoot)/etc/bash-completion/reconcilectl'
            complete -p reconcilectl
            t() {
                COMP_WORDS=('\(ChildProcess.executable("reconcilectl"))' --config '\(harness.configPath)' "$@")
                COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
                COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}
                _reconcilectl
                echo "$*|${COMPREPLY[*]}"
            }
            t sh
            t show A
            t hold A1 ''
            t list --state p
            t shape --by ''
            t shape --j
            t submit '\(harness.directory.file("ord"))'
            t status ''
            """
        let bash = try await ToolProcess.run("/bin/bash", ["--norc", "--noprofile", "-c", script])
        #expect(bash.status == 0, "\(bash.output)")
        let lines = bash.output.split(separator: "\n").map(String.init)
        #expect(lines.first == "complete -F _reconcilectl reconcilectl")
        #expect(Array(lines.dropFirst()) == [
            "sh|shape show",
            "show A|A1 A2",
            "hold A1 |A1 A2 B1",
            "list --state p|pending",
            "shape --by |state product endpoint",
            "shape --j|--json",
            "submit \(harness.directory.file("ord"))|\(harness.directory.file("order-1.json"))",
            "status |",
        ])
    }
}
