import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// `CAFile=` adds a trust anchor for its own section's endpoints only, and a reload that removes
/// it is in force at once (DESIGN §5): the mock served over HTTPS with kept-alive connections (a
/// TLS front in the test), its certificate from a test authority.
@Suite("End to end: CAFile= trust anchors", .serialized)
struct TrustAnchorEndToEndTests {
    /// The mock, and an HTTPS front for it whose certificate chains to `ca.pem` in the directory.
    static func start(_ harness: Harness, mockArguments: [String] = []) async throws -> TLSTerminator {
        try await harness.startMock(mockArguments)
        let certificates = try await TestServerCertificates.make(in: harness.directory.path)
        _ = rename(certificates.authority, harness.directory.file("ca.pem"))
        return try TLSTerminator(certificate: certificates.certificate, key: certificates.key, backendPort: harness.mockPort)
    }

    /// `(outcome, detail)` of the requests of one order's attempts to `endpoint`.
    static func attempts(_ harness: Harness, _ orderID: String, endpoint: String) throws -> [(String, String)] {
        try harness.store().withConnection {
            try $0.query(
                "SELECT a.outcome, coalesce(a.detail, '') FROM attempts a JOIN orders o ON o.id = a.order_ref WHERE o.order_id = ? AND a.endpoint = ?",
                [.text(orderID), .text(endpoint)]
            ) { ($0.string(0), $0.string(1)) }
        }
    }

    @Test("[Delivery] CAFile= trusts the test authority for delivery only: the sandbox on the same HTTPS server, without it, fails verification — even with the delivery's connection kept alive")
    func anchorsStayInTheirSection() async throws {
        let harness = Harness("ca-sections")
        let front = try await Self.start(harness, mockArguments: ["--shared-secret", "s3cret"])
        defer { front.stop() }
        harness.directory.write("shared-secret", "s3cret\n")
        let https = "https://127.0.0.1:\(front.port)"
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            SandboxURL=\(https)/sandbox/verifyReceipt
            BundleID=com.example.app
            AllowSandbox=yes
            SharedSecretFile=shared-secret
            MaxRate=infinity
            CircuitThreshold=100000
            [Delivery]
            URL=\(https)/deliver
            CAFile=ca.pem
            \(VerificationEndToEndTests.quickRetry)
            """)
        harness.dropOrder("D1", receipt: appleReceipt("9300001"))
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        #expect(try await harness.mockStats().byEndpoint["delivery"] == 1, "delivered over HTTPS with the section's anchor")

        // A sandbox receipt: 21007 from production, then the bounce to the same HTTPS server,
        // whose certificate [Verifier] has no anchor for.
        harness.dropOrder("S1", receipt: appleReceipt("9300002", environment: "Sandbox"))
        #expect(await eventually(timeout: .seconds(20)) { ((try? Self.attempts(harness, "S1", endpoint: "sandbox")) ?? []).count >= 3 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.store().order(id: "S1")?.state != .finished, "the sandbox was trusted with the delivery section's anchor")
        #expect(try await harness.mockStats().byEndpoint["sandbox"] == nil)
        for (outcome, detail) in try Self.attempts(harness, "S1", endpoint: "sandbox") {
            #expect(outcome == "transient" && detail.hasPrefix("tls"), "\(outcome): \(detail)")
        }
    }

    @Test("a reload that removes CAFile=: the endpoint it made trusted fails verification from then on, kept-alive connection or not")
    func reloadRemovesAnchor() async throws {
        let harness = Harness("ca-reload")
        let front = try await Self.start(harness)
        defer { front.stop() }
        func configuration(caFile: Bool) -> String {
            """
            [Verifier]
            Kind=http
            URL=https://127.0.0.1:\(front.port)/merchant/verify
            \(caFile ? "CAFile=ca.pem" : "")
            MaxRate=infinity
            CircuitThreshold=100000
            \(VerificationEndToEndTests.quickRetry)
            """
        }
        harness.configure(configuration(caFile: true))
        harness.dropOrder("M1")
        let daemon = try harness.startDaemon()
        #expect(await harness.waitFor(.finished, count: 1, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(600))")

        harness.configure(configuration(caFile: false))
        let reload = try await harness.ctl(["reload", "--wait"])
        #expect(reload.status == 0, "\(reload.error)")
        harness.dropOrder("M2")
        #expect(await eventually(timeout: .seconds(20)) { ((try? Self.attempts(harness, "M2", endpoint: "merchant")) ?? []).count >= 3 })
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(try harness.store().order(id: "M2")?.state != .finished, "the removed anchor was still trusted")
        #expect(try await harness.mockStats().grantRequests["M2"] == nil)
        for (outcome, detail) in try Self.attempts(harness, "M2", endpoint: "merchant") {
            #expect(outcome == "transient" && detail.hasPrefix("tls"), "\(outcome): \(detail)")
        }
    }
}
