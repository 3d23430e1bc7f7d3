import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore

/// The crash torture's promises for refunds (issue 17): refund notifications, then reversals for
/// half of them, arrive while the merchant's revocation endpoint fails at random and the daemon
/// is SIGKILLed at random moments. At the end every order is revoked or finished again as its
/// notifications say, every notification was taken in once, and the merchant received every
/// event under exactly one key — `<order>:revoked:1`, and `<order>:reinstated:1` for the reversed
/// — however many times it was sent: 0 lost events, 0 duplicate keys.
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
        let reversed = Set(ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
        func torture(_ phase: String, files: [(String, String)]) async throws {
            let perRound = (files.count + kills - 1) / kills
            for round in 0..<kills {
                for (name, text) in files.dropFirst(round * perRound).prefix(perRound) { harness.drop(name, text) }
                let daemon = try harness.startDaemon()
                try await Task.sleep(for: .milliseconds(Int.random(in: 100...600, using: &generator)))
                daemon.send(SIGKILL)
                #expect(await daemon.wait() == 128 + SIGKILL, "\(phase) round \(round): the daemon ended on its own: \(daemon.standardError.suffix(500))")
            }
        }
        let refunds = try ids.enumerated().map { index, id in
            ("refund-\(id).json", try NotificationEndToEndTests.notificationFile(setup.signer, id: "refund-\(id)", type: "REFUND", transactionID: String(5_000 + index)))
        }
        try await torture("refunds", files: refunds)
        daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.revoked, count: total, timeout: .seconds(60)), "seed \(seed): \(harness.counts())")
        daemon.send(SIGKILL)
        _ = await daemon.wait()
        let reversals = try ids.enumerated().filter { reversed.contains($0.element) }.map { index, id in
            ("reversal-\(id).json", try NotificationEndToEndTests.notificationFile(
                setup.signer, id: "reversal-\(id)", type: "REFUND_REVERSED", transactionID: String(5_000 + index), revoked: false))
        }
        try await torture("reversals", files: reversals)

        // The faults stop; a last daemon sends what is left and stops cleanly.
        try await harness.configureMock(#"{"reset":true}"#)
        daemon = try await harness.startDaemonAndWait()
        let settled = await eventually(timeout: .seconds(120), every: .milliseconds(200)) {
            harness.counts()[.finished, default: 0] == reversed.count && (try? harness.store().outboxSummary().pending) == 0
        }
        #expect(settled, "seed \(seed): \(harness.counts()), outbox \(String(describing: try? harness.store().outboxSummary()))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        let store = try harness.store()
        for id in ids {
            #expect(try store.order(id: id)?.state == (reversed.contains(id) ? .finished : .revoked), "seed \(seed): \(id)")
        }
        #expect(try harness.scalar("SELECT count(*) FROM notifications") == total + reversed.count, "a notification taken in twice, or lost")
        let stats = try await harness.mockStats()
        for id in ids {
            let expected = reversed.contains(id) ? ["\(id):revoked:1", "\(id):reinstated:1"] : ["\(id):revoked:1"]
            let keys = Set(stats.revocationKeys[id] ?? [])
            #expect(keys == Set(expected), "seed \(seed): \(id) reached the merchant under \(keys.sorted()), expected \(expected)")
            for key in expected {
                #expect((stats.revocationsSucceeded[key] ?? 0) >= 1, "seed \(seed): \(key) never taken by the merchant")
            }
        }
        #expect(try harness.scalar("SELECT count(*) FROM outbox WHERE kind = 'revocation_notice' AND state <> 'done'") == 0)
        #expect(try harness.scalar("SELECT count(*) FROM outbox WHERE kind = 'revocation_notice'") == total + reversed.count, "an event recorded twice, or one missing")
        let incoming = try FileManager.default.contentsOfDirectory(atPath: harness.directory.file("spool/incoming"))
        #expect(incoming.isEmpty, "\(incoming.count) files left in incoming/")
        let sent = stats.revocations.values.reduce(0, +)
        print("revocation torture: \(2 * kills) kills survived, \(total + reversed.count) events, \(sent) requests to the merchant (seed \(seed))")
    }
}
