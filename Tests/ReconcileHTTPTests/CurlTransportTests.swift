import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
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

    @Test("the path goes as built: dot segments are not removed (issue 23, item 1)")
    func pathAsIs() async throws {
        let (server, seen) = try server { _ in .json(200, .object(JSONObject([:]))) }
        defer { server.stop() }
        _ = await transport.send(request(server.port, path: "/tokens/./x/../y/.."))
        #expect(seen.first?.path == "/tokens/./x/../y/..")
    }

    @Test("a server slower than the time-out is a timeout, not a wait for its answer")
    func timeout() async throws {
        // The answer would come after two minutes: only the 300 ms time-out can end the request
        // within the bound, however slow the machine (a sanitized run shares two loaded cores).
        let (server, _) = try server { _ in ServerReply(status: 200, delay: .seconds(120)) }
        defer { server.stop() }
        let result = await transport.send(request(server.port, timeout: .milliseconds(300)))
        guard case .failure(let failure) = result.outcome else { Issue.record("got an answer"); return }
        #expect(failure.kind == .timeout)
        // As the transport's own thread measured it: not before the time-out, and long before
        // the answer. (libcurl times the request on its own clock, rounded to milliseconds: it
        // may end a fraction of a millisecond before Swift's clock says 300 ms, 0.29985 s seen.)
        #expect(result.latency >= .milliseconds(299) && result.latency < .seconds(60), "\(result.latency)")
    }

    @Test("a cancelled request ends at once as cancelled; a request of a task cancelled before it was sent is not sent")
    func cancellation() async throws {
        // The server would answer after two minutes, past the request's own 60 s time-out: only
        // the cancellation can end the request within the bound.
        let (server, seen) = try server { _ in ServerReply(status: 200, delay: .seconds(120)) }
        defer { server.stop() }
        let sending = Task { await transport.send(request(server.port, timeout: .seconds(60))) }
        #expect(await eventually(every: .milliseconds(5)) { seen.count == 1 }, "the request never reached the server")
        sending.cancel()
        let result = await sending.value
        guard case .failure(let failure) = result.outcome else { Issue.record("got an answer"); return }
        #expect(failure.kind == .cancelled)
        #expect(result.latency < .seconds(60), "\(result.latency)")

        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await transport.send(request(server.port, path: "/never", timeout: .seconds(60)))
        }
        guard case .failure(let earlyFailure) = await early.value.outcome else { Issue.record("got an answer"); return }
        #expect(earlyFailure.kind == .cancelled)
        #expect(!seen.requests.withLock { $0.contains { $0.path == "/never" } })
    }

    @Test("nothing listening is connection refused")
    func refused() async throws {
        let (server, _) = try server { _ in ServerReply(status: 200) }
        let port = server.port
        server.stop()  // the listening socket is closed when it returns
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

    @Test("connections the server closes after each answer: every request answered on a new one, one at a time and many at once, with handles reused")
    func closedConnections() async throws {
        let (server, seen) = try server { request in ServerReply(status: 200, headers: [HTTPHeader("Connection", "close")], body: request.body) }
        defer { server.stop() }
        let port = server.port
        for _ in 0..<30 {
            #expect(await transport.send(request(port)).response?.status == 200)
        }
        let transport = transport
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<60 { group.addTask { await transport.send(request(port)).response?.status ?? 0 } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 60 && statuses.allSatisfy { $0 == 200 }, "\(statuses.filter { $0 != 200 })")
        #expect(seen.count == 90)
        // Idle (the loop sleeps without a deadline), then woken by a new request.
        #expect(await eventually(timeout: .seconds(10)) { transport.isIdle }, "the loop never went idle")
        #expect(await transport.send(request(port)).response?.status == 200)
    }

    @Test("a reused handle carries nothing of the request before: a GET after a POST has no body, no content type and its own method")
    func reusedHandle() async throws {
        let (server, seen) = try server { _ in ServerReply(status: 200) }
        defer { server.stop() }
        #expect(await transport.send(request(server.port)).response?.status == 200)
        let get = HTTPRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/y", headers: [HTTPHeader("Accept", "application/json")], timeout: .seconds(5))
        #expect(await transport.send(get).response?.status == 200)
        let requests = seen.requests.withLock { $0 }
        #expect(requests.count == 2)
        let second = try #require(requests.last)
        #expect(second.method == "GET" && second.path == "/y" && second.body.isEmpty)
        #expect(second.header("content-type") == nil && second.header("idempotency-key") == nil)
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
        let port = try LoopbackPort.free()
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        server.arguments = ["s_server", "-accept", "127.0.0.1:\(port)", "-cert", certificate, "-key", key, "-www", "-quiet"]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        defer { kill(server.processIdentifier, SIGKILL) }  // openssl s_server ignores SIGTERM
        var get = HTTPRequest(method: "GET", url: "https://127.0.0.1:\(port)/", timeout: .seconds(5))
        // openssl takes a while to listen on a loaded (or sanitized) machine: up to 10 s, stretched.
        var result = await transport.send(get)
        _ = await eventually(timeout: .seconds(10), every: .milliseconds(50)) {
            guard case .failure(let failure) = result.outcome, failure.kind == .connectionRefused else { return true }
            result = await transport.send(get)
            return false
        }
        guard case .failure(let failure) = result.outcome else { Issue.record("an unverifiable certificate was accepted"); return }
        #expect(failure.kind == .tls, "\(failure)")
        get.trustAnchors = try Self.anchors(certificate)
        let trusted = await transport.send(get)
        #expect(trusted.response?.status == 200, "\(trusted.outcome)")
    }

    /// The PEM file at `path` as a section's anchors.
    static func anchors(_ path: String) throws -> TrustAnchors {
        TrustAnchors(path: path, pem: Array(try Data(contentsOf: URL(fileURLWithPath: path))))
    }

    /// An HTTPS server with kept-alive connections (a TLS front for a mock server) and the
    /// authority its certificate chains to.
    func keepAliveTLS(_ directory: TemporaryDirectory) async throws -> (TLSTerminator, MockHTTPServer, TrustAnchors) {
        let certificates = try await TestServerCertificates.make(in: directory.path)
        let backend = try MockHTTPServer { _ in .json(200, .object(JSONObject(["ok": .bool(true)]))) }
        let front = try TLSTerminator(certificate: certificates.certificate, key: certificates.key, backendPort: backend.port)
        let anchors = try Self.anchors(certificates.authority)
        return (front, backend, anchors)
    }

    @Test("a section's anchors add to the system's: a server only the system's bundle trusts is verified for a request carrying other anchors, over a store parsed once")
    func systemAnchorsStayWithSectionAnchors() async throws {
        let directory = TemporaryDirectory(prefix: "tls-system")
        let (front, backend, systemAuthority) = try await keepAliveTLS(directory)
        defer { front.stop(); backend.stop() }
        let other = try await TestServerCertificates.make(in: directory.path, name: "other")
        let otherAnchors = try Self.anchors(other.authority)
        // The "system" trusts the server's authority; the section trusts another one only.
        let transport = CurlTransport(systemAnchors: systemAuthority.pem)
        var request = HTTPRequest(method: "GET", url: "https://127.0.0.1:\(front.port)/x", timeout: .seconds(10))
        request.trustAnchors = otherAnchors
        let answered = await transport.send(request)
        #expect(answered.response?.status == 200, "\(answered.outcome)")
        // The blob given to libcurl is the section's anchors (and a comment); the store holds both.
        let bundle = CertificateBundle(system: systemAuthority.pem, anchors: otherAnchors)
        #expect(bundle.blob.suffix(otherAnchors.pem.count).elementsEqual(otherAnchors.pem) && bundle.blob.starts(with: Array("# reconciled".utf8)) && bundle.store != nil)
    }

    @Test("a request without CAFile= is verified with the system's anchors, parsed once into a store (libcurl is given the first of them only)")
    func systemAnchorsParsedOnce() async throws {
        let directory = TemporaryDirectory(prefix: "tls-system-only")
        let (front, backend, serverAuthority) = try await keepAliveTLS(directory)
        defer { front.stop(); backend.stop() }
        let other = try await TestServerCertificates.make(in: directory.path, name: "other")
        let otherPEM = Array(try Data(contentsOf: URL(fileURLWithPath: other.authority)))
        // The server's authority is the "system" bundle's second certificate: the blob libcurl
        // gets (the first) would not verify it; the store made of the whole bundle does.
        let transport = CurlTransport(systemAnchors: otherPEM + serverAuthority.pem)
        let request = HTTPRequest(method: "GET", url: "https://127.0.0.1:\(front.port)/x", timeout: .seconds(10))
        let answered = await transport.send(request)
        #expect(answered.response?.status == 200, "\(answered.outcome)")
        #expect(await transport.send(request).response?.status == 200)
        #expect(front.handshakes == 1, "\(front.handshakes) handshakes")
        let bundle = CertificateBundle(system: otherPEM + serverAuthority.pem, anchors: nil)
        #expect(bundle.blob.suffix(CertificateBundle.firstCertificate(of: otherPEM).count).elementsEqual(CertificateBundle.firstCertificate(of: otherPEM)))
        #expect(CertificateBundle.firstCertificate(of: Array("no certificate here".utf8)).isEmpty)
    }

    @Test("anchors one request carries are trusted for that request only: not for another without them, nor over the connection it left open")
    func anchorsPerRequest() async throws {
        let directory = TemporaryDirectory(prefix: "tls-anchors")
        let (front, backend, anchors) = try await keepAliveTLS(directory)
        defer { front.stop(); backend.stop() }
        let other = try await TestServerCertificates.make(in: directory.path, name: "other")
        let otherAnchors = try Self.anchors(other.authority)
        var request = HTTPRequest(method: "GET", url: "https://127.0.0.1:\(front.port)/x", timeout: .seconds(10))

        request.trustAnchors = anchors  // the section that trusts the test authority
        #expect(await transport.send(request).response?.status == 200)
        request.trustAnchors = nil  // another section, or the same after a reload removed CAFile=
        guard case .failure(let failure) = await transport.send(request).outcome else {
            Issue.record("a request without the anchors was answered (over the trusting request's connection?)")
            return
        }
        #expect(failure.kind == .tls, "\(failure)")
        request.trustAnchors = otherAnchors  // a section trusting another authority
        #expect(await transport.send(request).isTLSFailure)
        request.trustAnchors = anchors
        #expect(await transport.send(request).response?.status == 200)
        #expect(await transport.send(request).response?.status == 200)
        // The connections are kept alive: the trusting requests shared one (one handshake
        // completed), which the others, refused on connections of their own, never used.
        #expect(front.handshakes == 1, "\(front.handshakes) handshakes")
        // A reload reads the system's anchors again: a connection verified before it serves
        // nothing after it (the distribution may have removed a root since).
        transport.reloadTrustAnchors()
        #expect(await transport.send(request).response?.status == 200)
        #expect(front.handshakes == 2, "\(front.handshakes) handshakes: the connection verified before the reload served after it")
    }

    @Test("a proxy is used only when the request names one: CONNECT to it for HTTPS, the request's headers and body never in the clear; loopback goes direct")
    func proxy() async throws {
        let proxy = try ConnectionRecorder()
        defer { proxy.stop() }
        let (server, seen) = try server { _ in ServerReply(status: 200) }
        defer { server.stop() }

        var direct = request(server.port)
        #expect(await transport.send(direct).response?.status == 200)  // no proxy named: none
        direct.proxy = proxy.url
        #expect(await transport.send(direct).response?.status == 200)  // loopback: direct even so
        #expect(seen.count == 2)
        #expect(proxy.requests.isEmpty)

        var remote = HTTPRequest(
            url: "https://merchant.invalid/verify", headers: [HTTPHeader("Authorization", "Bearer t0ken-SECRET")],
            body: Array(#"{"receipt":"R3CEIPT"}"#.utf8), timeout: .seconds(5), proxy: proxy.url)
        let result = await transport.send(remote)
        #expect(result.response == nil, "\(result.outcome)")
        let heads = proxy.requests
        #expect(heads.count == 1)
        #expect(heads.first?.hasPrefix("CONNECT merchant.invalid:443 HTTP/1.1\r\n") == true, "\(heads)")
        #expect(!heads.joined().contains("t0ken-SECRET") && !heads.joined().contains("R3CEIPT"))
        remote.proxy = nil
        _ = await transport.send(remote)  // a DNS failure, not the proxy
        #expect(proxy.requests.count == 1)
    }
}

extension HTTPExchangeResult {
    var isTLSFailure: Bool {
        if case .failure(let failure) = outcome { return failure.kind == .tls }
        return false
    }
}
