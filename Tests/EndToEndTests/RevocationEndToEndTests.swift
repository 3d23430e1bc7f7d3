import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// Telling the merchant about refunds (issue 17, DESIGN §5a) against the mock's `/revocation`:
/// a finished order's `revocation_notice`, written into the store as the recording rule writes it
/// (the notification intake is built elsewhere), sent by the daemon with `[Revocation] URL=`.
@Suite("End to end: telling the merchant about refunds", .serialized)
struct RevocationEndToEndTests {
    static let token = "e2e-revocation-SECRET-31337"

    /// The notice the recording rule writes for `orderID`'s first refund.
    static func payload(_ orderID: String) -> String {
        #"{"event":"revoked","order_id":"\#(orderID)","product_id":"gems","transaction_id":"m-\#(orderID)","store":"app_store","quantity":1,"reason":"refunded","revoked_at":"2026-11-30T05:27:06Z","environment":"Production","user_id":"user-\#(orderID)","application_username":null}"#
    }

    /// Writes `orderID`'s revocation notice into the stopped daemon's store, due now; its key.
    func recordNotice(_ harness: Harness, _ orderID: String) throws -> String {
        let connection = try SQLiteConnection(path: harness.directory.file("state/orders.db"), mode: .readWrite(create: false), busyTimeout: .seconds(10))
        defer { connection.close() }
        guard let reference = try connection.scalar("SELECT id FROM orders WHERE order_id = ? AND state = 'finished'", [.text(orderID)]) else {
            throw HarnessError("order \(orderID) is not finished")
        }
        let now = Date()
        let key = "\(orderID):revoked:1"
        let action = OutboxAction(
            orderID: orderID, kind: .revocationNotice, endpoint: .revocation, idempotencyKey: key, payload: Self.payload(orderID),
            nextAttemptAt: now, createdAt: now, updatedAt: now, reason: .queued, detail: "refunded")
        let columns = OutboxColumns.insert
        try connection.run(
            "INSERT INTO outbox (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))",
            OutboxColumns.insertValues(action, orderReference: reference).map(SQLiteValue.init))
        return key
    }

    func notice(_ harness: Harness, _ orderID: String) throws -> OutboxAction? {
        try harness.store().actions(orderID: orderID).first { $0.kind == .revocationNotice }
    }

    func stop(_ daemon: ChildProcess) async {
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
    }

    @Test("a notice is received once with its key and body; after a 503 it is sent again and received once more under the same key; a daemon killed between the merchant's answer and the commit sends it again after restart with the SAME key")
    func notices() async throws {
        let harness = Harness("revocation")
        try await harness.startMock(["--token", Self.token])
        harness.directory.write("token", Self.token)
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(harness.base)/merchant/verify
            TokenFile=token
            [Revocation]
            URL=\(harness.base)/revocation
            TokenFile=token
            Timeout=10s
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=1000
            """)
        for orderID in ["R1", "R2", "R3"] { harness.dropOrder(orderID) }
        var daemon = try await harness.startDaemonAndWait()
        #expect(await harness.waitFor(.finished, count: 3), "\(harness.counts())")
        await stop(daemon)

        // 1. One notice, received once, under its key, the body as recorded.
        let key1 = try recordNotice(harness, "R1")
        daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { (try? notice(harness, "R1"))??.state == .done }, "\(String(describing: try? notice(harness, "R1")))")
        var stats = try await harness.mockStats()
        #expect(stats.revocations[key1] == 1 && stats.revocationsSucceeded[key1] == 1)
        #expect(stats.revocationKeys["R1"] == [key1])
        #expect(stats.revocationBodies[key1] == (try JSONParser().parse(Array(Self.payload("R1").utf8))))
        #expect(stats.revocationContentTypeMismatches == 0)
        #expect(try notice(harness, "R1")?.attempts == 1 && notice(harness, "R1")?.reason == .notified)
        await stop(daemon)

        // 2. The merchant fails with 503 first: sent again under the same key, taken once.
        try await harness.configureMock(#"{"revocation_status":503}"#)
        let key2 = try recordNotice(harness, "R2")
        daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { ((try? await harness.mockStats())?.revocations[key2] ?? 0) >= 1 })
        try await harness.configureMock(#"{"revocation_status":200}"#)
        #expect(await eventually(timeout: .seconds(20)) { (try? notice(harness, "R2"))??.state == .done })
        stats = try await harness.mockStats()
        #expect((stats.revocations[key2] ?? 0) >= 2, "the 503 was retried")
        #expect(stats.revocationsSucceeded[key2] == 1, "received once")
        #expect(Set(stats.revocationKeys["R2"] ?? []) == [key2], "every attempt under the same key")
        await stop(daemon)

        // 3. Killed after the merchant took it, before the commit: sent again with the SAME key.
        // The answer comes 8 s late (within Timeout=10s): the kill lands before it, however slow.
        try await harness.configureMock(#"{"latency_ms":8000,"path_prefix":"/revocation"}"#)
        let key3 = try recordNotice(harness, "R3")
        daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { (try? await harness.mockStats())?.revocations[key3] == 1 })
        daemon.send(SIGKILL)
        _ = await daemon.wait()
        let leftover = try #require(try notice(harness, "R3"))
        #expect(leftover.state == .pending && leftover.lease != nil, "the outcome was never committed")
        try await harness.configureMock(#"{"reset":true}"#)
        daemon = try await harness.startDaemonAndWait()
        #expect(await eventually(timeout: .seconds(20)) { (try? notice(harness, "R3"))??.state == .done })
        stats = try await harness.mockStats()
        #expect(stats.revocations[key3] == 2, "sent again after the restart")
        #expect(stats.revocationKeys["R3"] == [key3, key3], "with the same Idempotency-Key: the merchant drops the repeat")
        #expect(stats.revocations.keys.sorted() == [key1, key2, key3], "no other key was ever sent")
        await stop(daemon)
        #expect(!daemon.standardError.contains(Self.token) && !daemon.standardError.contains("SECRET"), "the token is never logged")
    }
}
