import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// The crash torture's promises for refunds (issues 17 and 23): each order's refund, for two in
/// three a reversal, and for a third of those a second refund — each signed by the store at its
/// own time — arrive shuffled, out of the store's order, while the merchant's revocation endpoint
/// fails at random and the daemon is SIGKILLed at random moments. At the end every order is where
/// its latest store event puts it, every notification was taken in once, the merchant's last word
/// for every order equals the order's final state, and every key is `<order>:<event>:<the store
/// event's id>` with the event its body says: 0 lost events, 0 keys reused.
@Suite("End to end: revocation torture", .serialized)
struct RevocationTortureEndToEndTests {
    @Test("refunds and reversals arrive, the merchant fails, the daemon is SIGKILLed at random: no event lost, none under two keys")
    func revocationTorture() async throws {
        let (total, kills) = CrashTortureEndToEndTests.soak ? (400, 40) : (60, 8)
        var random = SystemRandomNumberGenerator()
        let seed = UInt64.random(in: 0...UInt64.max, using: &random)
        var generator = SeededRandomSource(seed: seed)
        let harness = Harness("revocation-torture")
        let setup = try await AppStoreEndToEndTests.setUp(harness, mockArguments: ["--seed", String(seed)])
        let ids = (0..<total).map { "R\($0)" }
        try await AppStoreEndToEndTests.register(harness, environment: "Production", ids.indices.map { (String(5_000 + $0), "gems", "") })
        // The configuration ends in quickRetry's [Retry] section.
        harness.configure(AppStoreEndToEndTests.configuration(harness) + """

            MaxAttempts=10000
            [Revocation]
            URL=\(harness.base)/revocation
            Timeout=2s
            """)
        for (index, id) in ids.enumerated() {
            harness.drop("\(id).json", OrderFixtures.orderJSON(id, product: "gems", receipt: nil, transactionID: String(5_000 + index)))
        }
        var daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: total, timeout: .seconds(60)), "\(harness.counts())")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        // The merchant's endpoint fails a third of the time: refused, reset, or its answer lost
        // after it recorded the event.
        try await harness.configureMock(#"{"status_rates":{"503":0.2},"reset_rate":0.05,"reset_mid_body_rate":0.1,"path_prefix":"/revocation"}"#)
        func torture(_ phase: String, files: [(String, String)]) async throws {
            let perRound = (files.count + kills - 1) / kills
            for round in 0..<kills {
                for (name, text) in files.dropFirst(round * perRound).prefix(perRound) { harness.drop(name, text) }
                let daemon = try harness.startDaemon()
                // real sleep: a random moment of another process's run is the torture
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...600, using: &generator)))
                daemon.send(SIGKILL)
                #expect(await daemon.wait() == 128 + SIGKILL, "\(phase) round \(round): the daemon ended on its own: \(daemon.standardError.suffix(500))")
            }
        }
        // The store's own times: refund at +1 s, reversal at +2 s, second refund at +3 s.
        let base = Int64(Date().timeIntervalSince1970 * 1000)  // the test chain is valid from its making on
        var events: [(name: String, text: String)] = []
        var finalState: [String: OrderState] = [:]
        for (index, id) in ids.enumerated() {
            let transaction = String(5_000 + index)
            var chain = [("refund", "REFUND")]
            if index % 3 != 0 { chain.append(("reversal", "REFUND_REVERSED")) }
            if index % 3 == 1 && index % 2 == 1 { chain.append(("rerefund", "REFUND")) }
            for (step, (name, type)) in chain.enumerated() {
                let text = try NotificationEndToEndTests.notificationFile(
                    setup.signer, id: "\(name)-\(id)", type: type, transactionID: transaction, revoked: type == "REFUND",
                    signedAt: base + Int64(step + 1) * 1000)
                events.append(("\(name)-\(id).json", text))
            }
            finalState[id] = chain.last?.1 == "REFUND" ? .revoked : .finished
        }
        // Out of the store's order: shuffled, then dropped a slice a round between kills.
        for index in events.indices.reversed() {
            events.swapAt(index, Int(generator.next() % UInt64(index + 1)))
        }
        try await torture("events", files: events.map { ($0.name, $0.text) })

        // The faults stop; a last daemon sends what is left and stops cleanly.
        try await harness.configureMock(#"{"reset":true}"#)
        daemon = try await harness.startDaemonAndWait()
        let finishedCount = finalState.values.filter { $0 == .finished }.count
        let settled = await eventually(timeout: .seconds(120), every: .milliseconds(200)) {
            harness.counts()[.finished, default: 0] == finishedCount && harness.counts()[.revoked, default: 0] == total - finishedCount
                && (try? harness.store().outboxSummary().pending) == 0
        }
        #expect(settled, "seed \(seed): \(harness.counts()), outbox \(String(describing: try? harness.store().outboxSummary()))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        for id in ids {
            #expect(try store.order(id: id)?.state == finalState[id], "seed \(seed): \(id)")
        }
        #expect(try harness.scalar("SELECT count(*) FROM notifications") == events.count, "a notification taken in twice, or lost")
        let stats = try await harness.mockStats()
        var reused = 0
        for id in ids {
            // Every key names the order, the event its body carries, and one of its store events.
            for key in Set(stats.revocationKeys[id] ?? []) {
                let parts = key.split(separator: ":", maxSplits: 2).map(String.init)
                let event = stats.revocationBodies[key]?["event"]?.stringValue
                if parts.count != 3 || parts[0] != id || parts[1] != event || !parts[2].hasSuffix("-\(id)") { reused += 1 }
            }
            // The merchant's last word is the order's final state (nothing, if never revoked).
            let last = stats.revocationsTaken[id]?.last.flatMap { stats.revocationBodies[$0]?["event"]?.stringValue }
            let expected: String? = finalState[id] == .revoked ? "revoked" : last == nil ? nil : "reinstated"
            #expect(last == expected, "seed \(seed): \(id) is \(String(describing: finalState[id])), the merchant's last word \(last ?? "none") (\(stats.revocationsTaken[id] ?? []))")
        }
        #expect(reused == 0, "seed \(seed): \(reused) keys do not name their order, event and store event")
        #expect(try harness.scalar("SELECT count(*) FROM outbox WHERE kind = 'revocation_notice' AND state NOT IN ('done', 'skipped')") == 0)
        let incoming = try FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming"))
        #expect(incoming.isEmpty, "\(incoming.count) files left in incoming/")
        let sent = stats.revocations.values.reduce(0, +)
        let superseded = try harness.scalar("SELECT count(*) FROM outbox WHERE kind = 'revocation_notice' AND state = 'skipped'")
        print("revocation torture: \(kills) kills survived, \(events.count) store events out of order, \(sent) requests to the merchant, \(superseded) notices superseded (seed \(seed))")
    }
}
