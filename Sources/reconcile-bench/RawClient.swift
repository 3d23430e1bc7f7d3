import Foundation
import Glibc
import ReconcileCore
import ReconcileFoundation
import ReconcileHTTP
import Synchronization

/// The transport alone (`CurlTransport`, as the daemon makes it), in a process of its own like
/// the daemon: `count` requests, `inFlight` at a time, each what the merchant verifier sends for a
/// distinct order (the same headers, the same body fields and sizes, its own `Idempotency-Key`),
/// the requests made before the clock starts. Run as `reconcile-bench raw-client …`; prints one
/// line, `requests_per_second=… cpu_seconds=… failures=…`.
enum RawClient {
    /// The receipt every benchmark order carries: 1,200 base64 characters (a small StoreKit 1
    /// receipt; real ones are larger).
    static let receipt = String(repeating: "MIIT", count: 300)

    /// What the merchant verifier sends for order `orderID` seeded by ``Seeding``.
    static func body(orderID: String) -> String {
        #"{"order_id":"\#(orderID)","product_id":"gems","receipt":"\#(receipt)","transaction_id":null,"#
            + #""application_username":null,"user_id":null,"amount":null,"currency":null,"created_at":null}"#
    }

    struct Result {
        var rate: Double
        var cpuSeconds: Double
        var failures: Int
    }

    /// The child's side.
    static func main(_ arguments: [String]) async -> Int32 {
        var url = "", count = 0, inFlight = 64, caFile: String?
        var index = 0
        while index + 1 < arguments.count {
            let value = arguments[index + 1]
            switch arguments[index] {
            case "--url": url = value
            case "--count": count = Int(value) ?? 0
            case "--in-flight": inFlight = Int(value) ?? 64
            case "--ca-file": caFile = value
            default: break
            }
            index += 2
        }
        guard !url.isEmpty, count > 0 else {
            FileHandle.standardError.write(Data("raw-client: --url and --count are needed\n".utf8))
            return 64
        }
        var anchors: TrustAnchors?
        if let caFile {
            guard let pem = FileManager.default.contents(atPath: caFile) else {
                FileHandle.standardError.write(Data("raw-client: cannot read \(caFile)\n".utf8))
                return 1
            }
            anchors = TrustAnchors(path: caFile, pem: Array(pem))
        }
        let transport = CurlTransport(maximumConnections: max(64, inFlight * 2))
        let requests = (0..<count).map { index in
            let orderID = "RAW\(index)"
            return HTTPRequest(
                url: url,
                headers: [
                    HTTPHeader("Content-Type", "application/json"), HTTPHeader("Accept", "application/json"),
                    HTTPHeader("User-Agent", "reconciled/\(ReconcileVersion.current)"),
                    HTTPHeader("Idempotency-Key", orderID), HTTPHeader("Reconcile-Attempt", "1"),
                ],
                body: Array(body(orderID: orderID).utf8), timeout: .seconds(10), trustAnchors: anchors)
        }
        // One request first: the bundle of anchors is made and the first connection opened.
        _ = await transport.send(requests[0])
        let next = Counter(), failures = Counter(), total = count
        let cpu = cpuSeconds()
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<inFlight {
                group.addTask {
                    while case let index = next.value.add(1, ordering: .relaxed).oldValue, index < total {
                        if await transport.send(requests[index]).response?.status != 200 { failures.value.add(1, ordering: .relaxed) }
                    }
                }
            }
        }
        let elapsed = (ContinuousClock.now - start).inSeconds
        print("requests_per_second=\(Double(count) / elapsed) cpu_seconds=\(cpuSeconds() - cpu) failures=\(failures.value.load(ordering: .relaxed))")
        return 0
    }

    /// This process's user + system CPU time.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    /// The parent's side: runs `executable raw-client …` and reads its line.
    static func run(executable: String, url: String, count: Int, inFlight: Int, caFile: String?, directory: String) throws -> Result {
        var arguments = ["raw-client", "--url", url, "--count", String(count), "--in-flight", String(inFlight)]
        if let caFile { arguments += ["--ca-file", caFile] }
        let output = try HTTPPeers.run(executable, arguments, in: directory)
        var fields: [String: Double] = [:]
        for pair in output.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1]) { fields[String(parts[0])] = value }
        }
        guard let rate = fields["requests_per_second"], let cpu = fields["cpu_seconds"], let failures = fields["failures"] else {
            throw BenchmarkError("raw-client said: \(output)")
        }
        guard failures == 0 else { throw BenchmarkError("raw-client: \(Int(failures)) of \(count) requests failed against \(url)") }
        return Result(rate: rate, cpuSeconds: cpu, failures: Int(failures))
    }
}
