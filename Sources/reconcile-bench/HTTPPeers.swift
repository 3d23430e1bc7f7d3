import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import TestSupport

/// The benchmark's outside peers, used when installed (never required): nginx, answering the
/// merchant protocol at once over plain HTTP and TLS, and `wrk`, the reference load generator.
enum HTTPPeers {
    /// The first of `names` found as an executable in `PATH` or the usual sbin directories.
    static func executable(_ names: String...) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/sbin"]
        for name in names {
            for directory in directories where access(directory + "/" + name, X_OK) == 0 {
                return directory + "/" + name
            }
        }
        return nil
    }

    /// A free TCP port on loopback (bound, read, closed; another process could take it meanwhile).
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0 }
        }
        guard bound else { throw BenchmarkError("no free port: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Runs a command to its end (`directory` holds its output for the while; paths in
    /// `arguments` are absolute); its standard output, or throws with its standard error.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], in directory: String) throws -> String {
        let output = directory + "/command-\(UInt32.random(in: 0...UInt32.max)).out"
        let errors = output + ".err"
        defer {
            unlink(output)
            unlink(errors)
        }
        let child = try Child(executable, arguments, output: output, errors: errors)
        let status = child.wait()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let reason = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            throw BenchmarkError("\(executable) \(arguments.joined(separator: " ")) exited with \(status): \(reason)")
        }
        return text
    }
}

/// A child process started with `posix_spawn`, every signal unblocked and at its default. (A
/// `Foundation.Process` started from a Swift task inherits the worker thread's mask, which blocks
/// SIGTERM and SIGINT: nginx and perf would never hear them.)
final class Child {
    let pid: pid_t
    private var status: Int32?

    init(_ executable: String, _ arguments: [String], output: String = "/dev/null", errors: String = "/dev/null") throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard result == 0 else { throw BenchmarkError("cannot start \(executable): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    deinit {
        if status == nil {
            kill(pid, SIGKILL)
            _ = wait()
        }
    }

    var isRunning: Bool {
        guard status == nil else { return false }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
        status = Self.exitStatus(raw)
        return false
    }

    /// Waits for the end; the exit status (128 + signal when killed).
    func wait() -> Int32 {
        if let status { return status }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) < 0 && errno == EINTR {}
        let status = Self.exitStatus(raw)
        self.status = status
        return status
    }

    func signal(_ number: Int32) {
        if status == nil { kill(pid, number) }
    }

    private static func exitStatus(_ raw: Int32) -> Int32 {
        (raw & 0x7f) == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
    }
}

/// nginx with one worker, answering every request at once with `{"result":"verified"}` (the
/// merchant protocol's grant): over plain HTTP, over TLS with kept-alive connections, and over
/// TLS closing every connection after one answer (`keepalive_timeout 0`), which makes a client
/// connect and shake hands for every request. `stub_status` counts the connections accepted.
final class NginxPeer {
    private var child: Child?
    let plainPort: UInt16
    let tlsPort: UInt16
    let tlsFreshPort: UInt16
    let certificates: TestServerCertificates
    let version: String

    static var installed: String? { HTTPPeers.executable("nginx") }

    init(directory: String) async throws {
        guard let nginx = Self.installed else { throw BenchmarkError("nginx is not installed") }
        certificates = try await TestServerCertificates.make(in: directory, name: "bench")
        plainPort = try HTTPPeers.freePort()
        tlsPort = try HTTPPeers.freePort()
        tlsFreshPort = try HTTPPeers.freePort()
        let answer = """
                location = /status { stub_status; }
                location / { default_type application/json; return 200 '{"result":"verified"}'; }
            """
        let tls = """
                ssl_certificate \(certificates.certificate);
                ssl_certificate_key \(certificates.key);
            """
        try """
            worker_processes 1;
            daemon off;
            master_process off;
            pid \(directory)/nginx.pid;
            error_log \(directory)/nginx-error.log warn;
            events { worker_connections 4096; }
            http {
                access_log off;
                client_body_temp_path \(directory)/nginx-body;
                keepalive_requests 100000000;
                keepalive_timeout 300s;
                server { listen 127.0.0.1:\(plainPort) backlog=4096;
            \(answer) }
                server { listen 127.0.0.1:\(tlsPort) ssl backlog=4096;
            \(tls)
            \(answer) }
                server { listen 127.0.0.1:\(tlsFreshPort) ssl backlog=4096; keepalive_timeout 0;
            \(tls)
            \(answer) }
            }
            """.write(toFile: directory + "/nginx.conf", atomically: true, encoding: .utf8)
        let versionText = (try? HTTPPeers.run(nginx, ["-v"], in: directory)) ?? ""
        version = versionText.isEmpty ? "nginx" : versionText.trimmingCharacters(in: .whitespacesAndNewlines)
        let child = try Child(nginx, ["-p", directory, "-c", directory + "/nginx.conf", "-e", directory + "/nginx-error.log"])
        self.child = child
        // Ready when it answers.
        let deadline = ContinuousClock.now + .seconds(10)
        while (try? acceptedConnections()) == nil {
            guard child.isRunning, ContinuousClock.now < deadline else {
                let log = (try? String(contentsOfFile: directory + "/nginx-error.log", encoding: .utf8)) ?? ""
                throw BenchmarkError("nginx did not start: \(log)")
            }
            usleep(20_000)
        }
    }

    deinit { stop() }

    func stop() {
        child?.signal(SIGTERM)
        _ = child?.wait()
        child = nil
    }

    func url(_ port: UInt16, tls: Bool = false) -> String {
        "\(tls ? "https" : "http")://127.0.0.1:\(port)/merchant/verify"
    }

    /// Connections nginx has accepted since it started (on any port; one TLS handshake each).
    /// Asked over a plain socket, so that asking costs no connection of the figures'.
    func acceptedConnections() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = plainPort.bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else { throw BenchmarkError("nginx is not listening") }
        let request = Array("GET /status HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            answer += buffer[0..<count]
        }
        // "server accepts handled requests\n A H R": this very connection is counted too.
        let text = String(decoding: answer, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(" ") && $0.split(separator: " ").count == 3 }),
            let accepted = Int(line.split(separator: " ")[0])
        else { throw BenchmarkError("nginx's status page did not say: \(text)") }
        return accepted - 1
    }
}

/// `wrk`: the most requests/s the server and loopback allow with the same connections and the
/// same request (a POST with the merchant protocol's headers and a body of the same size).
enum WrkPeer {
    static var installed: String? { HTTPPeers.executable("wrk") }

    static func requestsPerSecond(url: String, connections: Int, duration: Duration, body: String, directory: String) throws -> Double {
        guard let wrk = installed else { throw BenchmarkError("wrk is not installed") }
        let quoted = body.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        try """
            wrk.method = "POST"
            wrk.body = "\(quoted)"
            wrk.headers["Content-Type"] = "application/json"
            wrk.headers["Accept"] = "application/json"
            wrk.headers["User-Agent"] = "reconciled"
            wrk.headers["Idempotency-Key"] = "WRK1"
            wrk.headers["Reconcile-Attempt"] = "1"
            """.write(toFile: directory + "/wrk.lua", atomically: true, encoding: .utf8)
        let seconds = max(1, Int(duration.inSeconds.rounded()))
        let output = try HTTPPeers.run(
            wrk, ["-t1", "-c\(connections)", "-d\(seconds)s", "-s", directory + "/wrk.lua", url], in: directory)
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("Requests/sec:") }),
            let rate = Double(line.split(separator: " ").last ?? "")
        else { throw BenchmarkError("wrk said: \(output)") }
        if let errors = output.split(separator: "\n").first(where: { $0.contains("Non-2xx") || $0.contains("Socket errors") }) {
            throw BenchmarkError("wrk saw errors: \(errors)")
        }
        return rate
    }
}

/// `perf record -g` attached to a process until stopped (`--perf`).
final class Profiler {
    let child: Child

    init(pid: Int32, output: String) throws {
        guard let perf = HTTPPeers.executable("perf") else { throw BenchmarkError("--perf: perf is not installed (apt-get install linux-perf)") }
        child = try Child(perf, ["record", "-g", "-F", "999", "-p", String(pid), "-o", output])
        usleep(200_000)  // attached before the figures start
    }

    func stop() {
        child.signal(SIGINT)
        _ = child.wait()
    }
}
