import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import ReconcileSystem
import Testing
import TestSupport
@testable import ReconcileStore
@testable import ReconcileSQLite

/// A hostile or broken verification server (issue 6): every fault is a retry with its reason,
/// never a grant; each attempt is logged once; the daemon keeps answering its control socket and
/// keeps petting the watchdog throughout.
@Suite("End to end: server faults", .serialized)
struct ServerFaultEndToEndTests {
    /// One way for the server to fail, and the reason the attempts must record.
    struct Fault: Sendable, CustomStringConvertible {
        var name: String
        /// Mock faults (JSON), or nil for a server that is not the mock.
        var faults: String?
        var reason: String
        /// The verifier's time-out: short only for the faults that are time-outs, so that they come
        /// quickly; long for the others, so that a slow (sanitized, loaded) mock or handshake is
        /// never recorded as a time-out instead of the fault.
        var timeout = "10s"
        var description: String { name }
    }

    static let faults: [Fault] = [
        Fault(name: "time-out", faults: #"{"latency_ms":1500}"#, reason: "timeout", timeout: "500ms"),
        Fault(name: "reset before the answer", faults: #"{"reset_rate":1}"#, reason: "connection_reset"),
        Fault(name: "reset mid-body", faults: #"{"reset_mid_body_rate":1}"#, reason: "connection_reset"),
        Fault(name: "slow body", faults: #"{"slow_body_rate":1,"slow_body_pause_ms":1500}"#, reason: "timeout", timeout: "500ms"),
        Fault(name: "body over the cap", faults: #"{"body_bytes":2000000}"#, reason: "body_too_large"),
        Fault(name: "garbage", faults: #"{"garbage_rate":1}"#, reason: "merchant_unparseable_answer"),
        Fault(name: "truncated JSON", faults: #"{"truncate_rate":1}"#, reason: "connection_reset"),
        Fault(name: "wrong content type", faults: #"{"content_type":"text/html"}"#, reason: "wrong_content_type"),
        Fault(name: "redirect to another host", faults: #"{"redirect_to":"http://192.0.2.10/verify"}"#, reason: "http_302_redirect_not_followed"),
        Fault(name: "5xx storm", faults: #"{"status_rates":{"500":0.5,"503":0.5}}"#, reason: "http_50"),
        Fault(name: "429 with Retry-After seconds", faults: #"{"status_rates":{"429":1},"retry_after":"1"}"#, reason: "http_429"),
        Fault(name: "503 with Retry-After date", faults: #"{"status_rates":{"503":1},"retry_after":"Wed, 21 Oct 2015 07:28:00 GMT"}"#, reason: "http_503"),
        Fault(name: "connection refused", faults: nil, reason: "connection_refused"),
        // `openssl s_server` serves one connection at a time: a handshake may wait its turn.
        Fault(name: "TLS certificate that does not verify", faults: nil, reason: "tls"),
    ]

    @Test("a fault is never a grant, each attempt is logged once, the socket answers and the watchdog pets", arguments: faults)
    func fault(_ fault: Fault) async throws {
        let harness = Harness("fault")
        var url: String
        var server: Process?
        switch fault.name {
        case "connection refused":
            url = "http://127.0.0.1:\(try Self.closedPort())/merchant/verify"
        case "TLS certificate that does not verify":
            let port = try Self.closedPort()
            server = try await Self.startTLSServer(port: port, directory: harness.directory)
            url = "https://127.0.0.1:\(port)/merchant/verify"
        default:
            try await harness.startMock(["--faults", fault.faults!])
            url = harness.base + "/merchant/verify"
        }
        defer {
            // openssl s_server ignores SIGTERM.
            if let server, server.isRunning { kill(server.processIdentifier, SIGKILL) }
        }
        harness.configure("""
            [Verifier]
            Kind=http
            URL=\(url)
            Timeout=\(fault.timeout)
            MaxInFlight=2
            MaxRate=infinity
            CircuitThreshold=100000
            \(VerificationEndToEndTests.quickRetry)
            MaxAttempts=100000
            """)
        for index in 0..<3 { harness.dropOrder("F\(index)") }
        let notify = try DatagramListener(path: harness.directory.file("notify.sock"))
        defer { notify.close() }
        let daemon = try harness.startDaemon(environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "2000000"])
        // Well into the faults: a few rounds of attempts on the three orders.
        #expect(await eventually(timeout: .seconds(30)) { (try? harness.scalar("SELECT count(*) FROM attempts")) ?? 0 >= 9 })

        // The control socket answers promptly while the faults go on (timed on the socket itself:
        // starting reconcilectl under a sanitizer on CI's loaded machine alone took 5.6 s once),
        // and reconcilectl gets its answer.
        let took = try await harness.statusAnswerTime()
        #expect(took < .seconds(5), "the daemon took \(took) to answer status")
        let status = try await harness.ctl(["status", "--json"])
        #expect(status.status == 0, "\(status.error)")
        // The watchdog is still being pinged.
        let lastPing = notify.datagrams.last { $0.text == "WATCHDOG=1" }?.arrived
        #expect(lastPing.map { ContinuousClock.now - $0 < .seconds(2) } == true, "no watchdog ping within WATCHDOG_USEC")
        daemon.send(SIGTERM)
        #expect(await daemon.wait() == 0)

        #expect(harness.counts()[.finished] == nil, "\(fault): an order was taken as verified")
        #expect(harness.counts()[.pending] == 3, "\(harness.counts())")
        let details = try harness.store().withConnection {
            try $0.query("SELECT outcome, coalesce(detail, '') FROM attempts") { ($0.string(0), $0.string(1)) }
        }
        #expect(!details.isEmpty)
        for (outcome, detail) in details {
            #expect(outcome == "transient", "\(fault): outcome \(outcome) (\(detail))")
            #expect(detail.hasPrefix(fault.reason), "\(fault): detail \(detail)")
        }
        // Each attempt is logged once with its reason — the first at the endpoint as a warning,
        // the rest of that minute at debug; none as finished. (An order leased but never sent
        // when SIGTERM came is given back with REASON=stopping.)
        let lines = daemon.standardError.split(separator: "\n")
        let warned = lines.filter { $0.contains(" warning: ") && $0.contains(" at merchant failed: \(fault.reason)") }
        #expect(warned.count == 1, "\(fault): one warning a minute per endpoint: \(lines.filter { $0.contains(" failed: ") }.map { $0.prefix(200) })")
        let retries = lines.filter { ($0.contains("will be retried") || $0.contains(" at merchant failed: \(fault.reason)")) && !$0.contains("REASON=stopping") }
        #expect(retries.count == details.count, "\(fault): \(retries.count) retry lines for \(details.count) attempts: \(retries.map { $0.suffix(160) })")
        #expect(!daemon.standardError.contains(" finished ("))
    }

    /// Whether something accepts TCP connections on the loopback port.
    static func accepts(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// A loopback port nothing listens on (bound, then closed).
    static func closedPort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw HarnessError("cannot find a free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// `openssl s_server` on loopback with a self-signed certificate made on the spot: TLS
    /// works, but the certificate verifies against no trust anchor the daemon has.
    static func startTLSServer(port: UInt16, directory: TemporaryDirectory) async throws -> Process {
        let key = directory.file("tls.key"), certificate = directory.file("tls.pem")
        let made = runTool("/usr/bin/openssl", [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
        ])
        guard made == 0 else { throw HarnessError("openssl req failed (\(made))") }
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = ["s_server", "-quiet", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www"]
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        // Listening once a connection is accepted (bounded: 10 s).
        _ = await eventually(timeout: .seconds(10), every: .milliseconds(50)) { Self.accepts(port) }
        return server
    }
}
