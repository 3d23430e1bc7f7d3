import Foundation
import Glibc
import ReconcileCore
import ReconcileCrypto
import ReconcileFoundation
import ReconcileSpool
import ReconcileStore
import ReconcileSystem
import ReconcileSQLite
import TestSupport

/// **discovery**: purchases the phone never sent (DESIGN §5b). App Store `ONE_TIME_CHARGE`
/// notification files, each signed with a throwaway App Store-shaped chain, go through the
/// daemon's own spool ingest — both signatures and the chain verified, the notification and
/// its purchase committed together (`synchronous=FULL`), the file unlinked — then every purchase,
/// its grace over, is settled into an order as the scheduler's turn does it. Purchases/s for
/// each step.
enum DiscoveryScenario {
    static let name = "discovery"

    @Sendable static func run(_ options: BenchmarkOptions) async throws -> BenchmarkReport {
        let count = options.files ?? (options.quick ? 2_000 : 20_000)
        let root = try options.makeDirectory(name)
        defer { try? FileManager.default.removeItem(atPath: root) }
        var report = BenchmarkReport(scenario: name)
        report.add("purchases", Double(count), "")

        let chain = try await TestCertificateChain.make()
        let signer = JWSSigner(key: try ES256PrivateKey(pem: chain.leafKeyPEM), certificateChainDER: chain.x5c)
        let layout = SpoolLayout(root: root + "/spool")
        try layout.prepare()
        try FileManager.default.createDirectory(atPath: root + "/state", withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: root + "/state/orders.db", mode: .owner)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        for index in 0..<count {
            let transaction = try signer.sign(payload: Array("""
                {"transactionId":"\(5_000_000_000 + index)","originalTransactionId":"\(5_000_000_000 + index)","productId":"gems",\
                "bundleId":"com.example.app","environment":"Production","purchaseDate":\(now - 60_000),"signedDate":\(now),\
                "type":"Consumable","appAccountToken":"5b1c2f4e-7d3a-4e2b-9c1d-\(String(format: "%012d", index))"}
                """.utf8))
            let payload = try signer.sign(payload: Array("""
                {"notificationType":"ONE_TIME_CHARGE","notificationUUID":"bench-\(index)","version":"2.0","signedDate":\(now),\
                "data":{"appAppleId":1234567890,"bundleId":"com.example.app","environment":"Production","signedTransactionInfo":"\(transaction)"}}
                """.utf8))
            let name = String(format: "otc-%06d.json", index)
            guard FileManager.default.createFile(atPath: layout.temporary + "/" + name, contents: Data("{\"signedPayload\":\"\(payload)\"}".utf8)) else {
                throw BenchmarkFailure("cannot write \(name)")
            }
            rename(layout.temporary + "/" + name, layout.incoming + "/" + name)
        }
        sync()

        let verifier = try SignedDataVerifier(rootCertificates: [chain.rootDER], bundleID: "com.example.app", environment: .production)
        var settings = SpoolIngestor.Settings(
            verifiers: ConfiguredVerifiers(kind: .appstore), maxFileSize: 1 << 20,
            notifications: NotificationFileReader(appStore: .init(production: verifier, sandbox: nil)))
        let deliver = DiscoverySettings(mode: .deliver, grace: .zero)
        settings.discovery = deliver
        let ingestor = SpoolIngestor(layout: layout, store: store, settings: settings, logger: .discarding, clock: SystemClock())
        let start = ContinuousClock.now
        let summary = await ingestor.rescan()
        let ingested = (ContinuousClock.now - start).inSeconds
        let waiting = try store.summary().discovered.waiting
        guard summary.notifications == count, waiting == count else {
            throw BenchmarkFailure("discovery lost track: \(summary.notifications) notifications, \(waiting) purchases waiting, of \(count)")
        }
        report.add("through files (verify, commit, unlink)", Double(count) / ingested, "purchases/s")

        // The scheduler settles at most 100 a turn; here as fast as the store allows.
        let settleStart = ContinuousClock.now
        var made = 0
        while true {
            let settled = try store.settleDiscovered(
                settings: deliver, verifiers: ConfiguredVerifiers(kind: .appstore), now: Date(), limit: 100, digest: { SHA256.hexDigest($0) })
            if settled.isEmpty { break }
            made += settled.filter { if case .becameOrder = $0.status { true } else { false } }.count
        }
        let settling = (ContinuousClock.now - settleStart).inSeconds
        guard made == count, try store.countsByState()[.pending] == count else { throw BenchmarkFailure("settling made \(made) orders of \(count)") }
        report.add("settled into orders, 100 a transaction", Double(count) / settling, "purchases/s")
        report.notes.append("state and spool on \(DiskProbe.filesystem(of: root)), synchronous=FULL; ES256 chain and two signatures per file")
        return report
    }
}
