import Foundation
import Glibc
import TestSupport

/// Hosts for a test, made of Linux network namespaces (`ip netns`): one namespace per host, each
/// with a veth pair whose other end sits on a bridge in a hub namespace of its own. Addresses are
/// private and exist only inside these namespaces; nothing is routed to or from the machine's own
/// network, so no traffic leaves the machine. Needs root and `iproute2`.
///
/// Names carry the test process's pid, so that runs on one machine do not meet; ``tearDown()``
/// deletes every namespace (their processes must have ended first).
final class TestNetwork: @unchecked Sendable {
    // @unchecked: used from one test at a time.
    static let ip = "/usr/sbin/ip"
    /// The private subnet inside the namespaces.
    static let subnet = "10.231.0"

    let suffix: String
    let hub: String
    /// Host name → namespace and address.
    private(set) var hosts: [String: (namespace: String, address: String)] = [:]

    /// Why these tests cannot run here, or `nil`: root, `ip netns` and `socat` are needed.
    static let unavailable: String? = {
        guard geteuid() == 0 else { return "not root (ip netns needs root)" }
        guard FileManager.default.isExecutableFile(atPath: ip) else { return "\(ip) is missing (Debian: iproute2)" }
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/socat") else { return "/usr/bin/socat is missing (Debian: socat)" }
        let probe = "rcprobe\(getpid() % 100_000)"
        guard runTool(ip, ["netns", "add", probe]) == 0 else { return "ip netns add failed (no network namespaces here)" }
        _ = runTool(ip, ["netns", "del", probe])
        return nil
    }()

    /// Set to `1` (as CI does) to make these tests fail, not skip, where they cannot run.
    static let requiredVariable = "RECONCILE_REQUIRE_NETNS"

    /// Whether to run: when possible, or when required (then they fail with the reason).
    static let isEnabled: Bool = {
        guard let reason = unavailable else { return true }
        if ProcessInfo.processInfo.environment[requiredVariable] == "1" { return true }
        FileHandle.standardError.write(Data("network-namespace tests skipped: \(reason) (set \(requiredVariable)=1 to make them fail instead)\n".utf8))
        return false
    }()

    init() throws {
        if let reason = Self.unavailable { throw HarnessError("cannot make test hosts: \(reason)") }
        Self.removeAbandoned()
        suffix = String(getpid() % 100_000)
        hub = "rchub\(suffix)"
        try run(["netns", "add", hub])
        try run(["-n", hub, "link", "set", "lo", "up"])
        try run(["-n", hub, "link", "add", "br0", "type", "bridge"])
        try run(["-n", hub, "link", "set", "br0", "up"])
    }

    /// Adds a host: a namespace with loopback up and `eth0` at `10.231.0.<number>/24` on the hub.
    @discardableResult
    func addHost(_ name: String, number: Int) throws -> String {
        let namespace = "rc\(name)\(suffix)"
        let address = "\(Self.subnet).\(number)"
        try run(["netns", "add", namespace])
        hosts[name] = (namespace, address)
        try run(["-n", namespace, "link", "set", "lo", "up"])
        try run(["-n", hub, "link", "add", "v\(name)", "type", "veth", "peer", "name", "eth0", "netns", namespace])
        try run(["-n", hub, "link", "set", "v\(name)", "master", "br0", "up"])
        try run(["-n", namespace, "addr", "add", "\(address)/24", "dev", "eth0"])
        try run(["-n", namespace, "link", "set", "eth0", "up"])
        return address
    }

    func namespace(_ host: String) -> String { hosts[host]!.namespace }
    func address(_ host: String) -> String { hosts[host]!.address }

    /// What runs a command inside `host`.
    func wrapper(_ host: String) -> [String] { [Self.ip, "netns", "exec", namespace(host)] }

    /// Takes `host`'s link down (cut off from every other host) or up again.
    func setLink(_ host: String, up: Bool) throws {
        try run(["-n", namespace(host), "link", "set", "eth0", up ? "up" : "down"])
    }

    /// Starts a program inside `host`, its output in `log`.
    func spawn(_ host: String, _ program: String, _ arguments: [String], log: String) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.ip)
        process.arguments = ["netns", "exec", namespace(host), program] + arguments
        guard FileManager.default.createFile(atPath: log, contents: nil) else { throw HarnessError("cannot create \(log)") }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle(forWritingAtPath: log)
        process.standardError = FileHandle(forWritingAtPath: log)
        try process.run()
        return process
    }

    /// Runs `ip` with `arguments` to its end.
    func run(_ arguments: [String]) throws {
        let status = runTool(Self.ip, arguments)
        guard status == 0 else { throw HarnessError("ip \(arguments.joined(separator: " ")) failed (status \(status))") }
    }

    /// Deletes the namespaces of test processes that died before they could (SIGKILL, a
    /// stopped run): names `rc…<pid>` whose pid is no longer a process.
    static func removeAbandoned() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "/run/netns")) ?? [] where name.hasPrefix("rc") {
            let digits = String(name.reversed().prefix { $0.isNumber }.reversed())
            guard let pid = Int32(digits), kill(pid, 0) != 0, errno == ESRCH else { continue }
            _ = runTool(ip, ["netns", "del", name])
        }
    }

    /// Deletes every namespace this network made.
    func tearDown() {
        for (_, host) in hosts { _ = runTool(Self.ip, ["netns", "del", host.namespace]) }
        _ = runTool(Self.ip, ["netns", "del", hub])
    }
}
