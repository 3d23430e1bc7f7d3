import Foundation
import Glibc
import ReconcileCore
import ReconcileMock
import Synchronization
import Testing
import TestSupport
@testable import ReconcileHTTP

@Suite("libcurl transport")
struct CurlTransportTests {
    let transport = CurlTransport()

    /// Remembers what a server was sent.
    final class Recorder: Sendable {
        let requests = Mutex<[ServerRequest]>([])
        var count: Int { requests.withLock { $0.count } }
        var first: ServerRequest? { requests.withLock { $0.first } }
    }

    /// A server that answers with `reply` and remembers what it was sent.
    func server(_ reply: @escaping @Sendable (ServerRequest) -> ServerReply) throws -> (MockHTTPServer, Recorder) {
        let seen = Recorder()
        let server = try MockHTTPServer { request in
            seen.requests.withLock { $0.append(request) }
            return reply(request)
        }
        return (server, seen)
    }

    func request(_ port: UInt16, path: String = "/x", timeout: Duration = .seconds(5), cap: Int = 1 << 20) -> HTTPRequest {
        HTTPRequest(
            url: "http://127.0.0.1:\(port)\(path)", headers: [HTTPHeader("Idempotency-Key", "A1"), HTTPHeader("Content-Type", "application/json")],
            body: Array(#"{"order_id":"A1"}"#.utf8), timeout: timeout, maximumResponseSize: cap)
    }

    @Test("a POST with headers and body; the answer's status, headers (names lower-cased) and body")
    func roundTrip() async throws {
        let (server, seen) = try server { _ in .json(201, .object(JSONObject(["ok": .bool(true)])), headers: [HTTPHeader("X-Thing", "yes")]) }
        defer { server.stop() }
        let result = await transport.send(request(server.port, path: "/merchant/verify?x=1"))
        let response = try #require(result.response)
        #expect(response.status == 201)
        #expect(response.header("x-thing") == "yes")
        #expect(response.headers.contains(HTTPHeader("x-thing", "yes")))
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"ok":true}"#)
        let sent = try #require(seen.first)
        #expect(sent.method == "POST")
        #expect(sent.path == "/merchant/verify")
        #expect(sent.header("idempotency-key") == "A1")
        #expect(sent.header("expect") == nil)
        #expect(String(decoding: sent.body, as: UTF8.self) == #"{"order_id":"A1"}"#)
        #expect(result.latency > .zero)
    }

    @Test("a server slower than the time-out is a timeout, on time")
    func timeout() async throws {
        let (server, _) = try server { _ in ServerReply(status: 200, delay: .seconds(10)) }
        defer { server.stop() }
        let start = ContinuousClock.now
        let result = await transport.send(request(server.port, timeout: .milliseconds(300)))
        guard case .failure(let failure) = result.outcome else { Issue.record("got an answer"); return }
        #expect(failure.kind == .timeout)
        // Before the server's 10 s answer (which would have been a 200), with room for a loaded
        // test machine.
        #expect(ContinuousClock.now - start < .seconds(9))
    }

    @Test("nothing listening is connection refused")
    func refused() async throws {
        let (server, _) = try server { _ in ServerReply(status: 200) }
        let port = server.port
        server.stop()
        try await Task.sleep(for: .milliseconds(50))
        let result = await transport.send(request(port))
        guard case .failure(let failure) = result.outcome else { Issue.record("got an answer"); return }
        #expect(failure.kind == .connectionRefused)
    }

    @Test("resets, truncated and oversized bodies are failures, never answers")
    func brokenAnswers() async throws {
        for (fault, cap, expected) in [
            (ServerReply.Fault.reset, 1 << 20, HTTPFailure.Kind.connectionReset),
            (.resetMidBody, 1 << 20, .connectionReset),
            (.truncated, 1 << 20, .connectionReset),
            (.none, 10, .bodyTooLarge),
        ] {
            let (server, _) = try server { _ in ServerReply(status: 200, body: Array(String(repeating: "x", count: 500).utf8), fault: fault) }
            let result = await transport.send(request(server.port, cap: cap))
            server.stop()
            guard case .failure(let failure) = result.outcome else { Issue.record("\(fault) gave an answer"); continue }
            #expect(failure.kind == expected, "\(fault): \(failure)")
        }
    }

    @Test("a redirect is returned, not followed")
    func redirect() async throws {
        let (server, seen) = try server { _ in ServerReply(status: 302, headers: [HTTPHeader("Location", "http://192.0.2.1/elsewhere")]) }
        defer { server.stop() }
        let result = await transport.send(request(server.port))
        #expect(result.response?.status == 302)
        #expect(seen.count == 1)
    }

    @Test("a slow body within the time-out arrives whole")
    func slowBody() async throws {
        let (server, _) = try server { _ in ServerReply(status: 200, body: Array("0123456789abcdefghij".utf8), fault: .slowBody(.milliseconds(20))) }
        defer { server.stop() }
        let result = await transport.send(request(server.port))
        #expect(result.response.map { String(decoding: $0.body, as: UTF8.self) } == "0123456789abcdefghij")
    }

    @Test("many requests at once over reused connections")
    func concurrency() async throws {
        let (server, seen) = try server { request in ServerReply(status: 200, body: request.body, delay: .milliseconds(20)) }
        defer { server.stop() }
        let port = server.port
        let transport = transport
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<200 { group.addTask { await transport.send(request(port)).response?.status ?? 0 } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 200)
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(seen.count == 200)
    }

    @Test("TLS: a certificate that does not verify fails; the same one added with CAFile passes")
    func tls() async throws {
        let directory = TemporaryDirectory(prefix: "tls")
        let certificate = directory.file("cert.pem")
        let key = directory.file("key.pem")
        let generate = Process()
        generate.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        generate.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", certificate,
        ]
        generate.standardError = FileHandle.nullDevice
        try generate.run()
        generate.waitUntilExit()
        #expect(generate.terminationStatus == 0)
        let port = Int.random(in: 20_000...40_000)
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www", "-quiet"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL) }  // openssl s_server ignores SIGTERM
        var get = HTTPRequest(method: "GET", url: "https://127.0.0.1:\(port)/", timeout: .seconds(5))
        var result = await transport.send(get)
        for _ in 0..<50 {
            guard case .failure(let failure) = result.outcome, failure.kind == .connectionRefused else { break }
            try await Task.sleep(for: .milliseconds(50))
            result = await transport.send(get)
        }
        guard case .failure(let failure) = result.outcome else { Issue.record("an unverifiable certificate was accepted"); return }
        #expect(failure.kind == .tls, "\(failure)")
        get.caFile = certificate
        let trusted = await transport.send(get)
        #expect(trusted.response?.status == 200, "\(trusted.outcome)")
    }
}
