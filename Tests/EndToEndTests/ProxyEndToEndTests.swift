import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Testing
import TestSupport

/// Proxies are used only when configured (`[Daemon] Proxy=`), never from the environment
/// (DESIGN §5): the merchant's bearer token and the receipt must not reach a proxy that
/// `http_proxy` names.
@Suite("End to end: proxies", .serialized)
struct ProxyEndToEndTests {
    static let token = "pr0xy-TOKEN-41d9"

    @Test("http_proxy, HTTPS_PROXY and ALL_PROXY in the daemon's environment: ignored; a proxy listening there receives nothing, over http or https")
    func environmentIgnored() async throws {
        let harness = Harness("proxy-env")
        let front = try await TrustAnchorEndToEndTests.start(harness, mockArguments: ["--shared-secret", "s3cret", "--token", Self.token])
        defer { front.stop() }
        let proxy = try ConnectionRecorder()
        defer { proxy.stop() }
        harness.directory.write("shared-secret", "s3cret\n")
        harness.directory.write("delivery-token", Self.token + "\n")
        harness.configure("""
            [Verifier]
            Kind=apple
            URL=\(harness.base)/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=shared-secret
            MaxRate=infinity
            [Delivery]
            URL=https://127.0.0.1:\(front.port)/deliver
            TokenFile=delivery-token
            CAFile=ca.pem
            \(VerificationEndToEndTests.quickRetry)
            """)
        for index in 0..<3 { harness.dropOrder("P\(index)", receipt: appleReceipt("940000\(index)")) }
        let environment = ["http_proxy": proxy.url, "HTTPS_PROXY": proxy.url, "https_proxy": proxy.url, "ALL_PROXY": proxy.url, "all_proxy": proxy.url]
        let daemon = try harness.startDaemon(environment: environment)
        #expect(await harness.waitFor(.finished, count: 3, timeout: .seconds(20)), "\(harness.counts()); \(daemon.standardError.suffix(600))")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)
        #expect(proxy.requests.isEmpty, "the proxy received: \(proxy.requests)")
        let stats = try await harness.mockStats()
        #expect(stats.byEndpoint["production"] == 3 && stats.byEndpoint["delivery"] == 3, "\(stats.byEndpoint)")
    }

    @Test("[Daemon] Proxy= is checked like a URL: a bad scheme or credentials are refused by name")
    func proxyKey() async throws {
        let harness = Harness("proxy-key")
        harness.configure("[Verifier]\nKind=http\nURL=https://merchant.example/verify\n[Daemon]\nProxy=ftp://proxy.example:21")
        let check = try await harness.ctl(["check-config"])
        #expect(check.status == 78)
        #expect(check.error.hasPrefix("\(harness.configPath):11: [Daemon] Proxy=: \"ftp://proxy.example:21\" is not a proxy URL: use http://, https://, socks5:// or socks5h://\n"), "\(check.error)")
        harness.configure("[Verifier]\nKind=http\nURL=https://merchant.example/verify\n[Daemon]\nProxy=http://proxy.example:3128")
        let good = try await harness.ctl(["check-config"])
        #expect(good.status == 0, "\(good.error)")
        #expect(good.output.contains("  proxy      http://proxy.example:3128\n"))
    }
}
