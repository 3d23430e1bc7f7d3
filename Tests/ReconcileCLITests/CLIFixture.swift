import Foundation
import ReconcileCore
import TestSupport
@testable import ReconcileCLI
@testable import ReconcileStore
@testable import ReconcileSQLite
import ReconcileFoundation

/// A configuration and a store with an order in every state, for running `reconcilectl`
/// in-process against a fixed clock, with no daemon.
final class CLIFixture: @unchecked Sendable {
    // @unchecked: used from one test at a time.
    let directory = TemporaryDirectory(prefix: "ctl")
    static let now = Date(timeIntervalSince1970: 1_796_023_566)  // 2026-11-30T07:26:06Z

    var configPath: String { directory.file("reconciled.conf") }

    init(populate: Bool = true) throws {
        directory.write("reconciled.conf", """
            [Spool]
            Directory=spool
            [State]
            Database=state/orders.db
            [Verifier]
            Kind=apple
            URL=https://buy.itunes.apple.com/verifyReceipt
            BundleID=com.example.app
            SharedSecretFile=secret
            [Control]
            Socket=run/control.sock
            """)
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.file("spool/tmp"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory.file("spool/incoming"), withIntermediateDirectories: true)
        let store = try SQLiteOrderStore(path: directory.file("state/orders.db"), mode: .owner)
        guard populate else { return }
        let t0 = Self.now.addingTimeInterval(-7200)
        let parser = OrderFileParser()
        for (index, state) in OrderState.allCases.enumerated() {
            let receipt = state == .waiting ? nil : "QUJDREVG"
            let text = OrderFixtures.orderJSON("O-\(state.rawValue)", product: "com.example.gems.\(index)", receipt: receipt, extra: "\"user_id\":\"u\(index)\"")
            let bytes = Array(text.utf8)
            _ = try store.ingest(
                [IngestCandidate(submission: try parser.parse(bytes), raw: bytes, contentHash: text, fileName: "O-\(state.rawValue).json")],
                verifierKind: .apple, now: t0.addingTimeInterval(Double(index * 60)))
            let next: Date? = switch state {
            case .pending: Self.now.addingTimeInterval(240)
            case .verified: Self.now.addingTimeInterval(30)
            default: nil
            }
            try store.write { connection in
                try connection.run(
                    """
                    UPDATE orders SET state = ?, resume_state = ?, next_attempt_at = ?, attempts = ?, reason = ?, updated_at = ?,
                        lease_owner = ?, verified_transaction_id = ?, environment = ?, finished_by = ?
                    WHERE order_id = ?
                    """,
                    [
                        .text(state.rawValue), .text(orNull: state == .held ? "pending" : nil), .integer(orNull: next?.epochMilliseconds),
                        .integer(index), .text(orNull: Self.reason(state)), .integer(t0.addingTimeInterval(Double(index * 60 + 30)).epochMilliseconds),
                        .text(orNull: state == .verifying ? "host:1:x" : nil),
                        .text(orNull: [.verified, .finished].contains(state) ? "100\(index)" : nil),
                        .text(orNull: [.verified, .finished].contains(state) ? "Production" : nil),
                        .text(orNull: state == .finished ? "verifier" : nil), .text("O-\(state.rawValue)"),
                    ])
                try SQLiteOrderStore.recordTransition(
                    connection, orderRef: Int64(index + 1), at: t0.addingTimeInterval(Double(index * 60 + 30)), actor: .daemon,
                    from: .pending, to: state, reason: ReasonCode(rawValue: Self.reason(state) ?? "test"), detail: nil)
            }
        }
        // A duplicate escalation, for --force.
        let text = OrderFixtures.orderJSON("O-duplicate", receipt: "QUJD")
        _ = try store.ingest(
            [IngestCandidate(submission: try parser.parse(Array(text.utf8)), raw: Array(text.utf8), contentHash: text, fileName: "d.json")],
            verifierKind: .apple, now: t0)
        try store.write { connection in
            try connection.run("UPDATE orders SET state = 'escalated', reason = 'duplicate_transaction', next_attempt_at = NULL WHERE order_id = 'O-duplicate'")
            try SQLiteOrderStore.recordTransition(
                connection, orderRef: Int64(OrderState.allCases.count + 1), at: t0, actor: .daemon, from: .verifying, to: .escalated, reason: "duplicate_transaction",
                detail: "transaction 7777 is claimed by order O-finished")
            try connection.run("INSERT INTO claims (transaction_id, order_ref, claimed_at, actor) VALUES ('7777', 5, 0, 'daemon')")
        }
    }

    static func reason(_ state: OrderState) -> String? {
        switch state {
        case .waiting: "no_usable_proof"
        case .pending: "apple_21005"
        case .rejected: "refunded"
        case .escalated: "max_attempts"
        case .expired: "max_age"
        case .finished: "verified"
        case .revoked: "refunded"
        default: nil
        }
    }

    /// Runs `reconcilectl --config <fixture> arguments…`; temporary paths are shown as `<dir>`.
    func run(_ arguments: [String], environment: [String: String] = [:], now: Date = CLIFixture.now) -> (status: Int32, out: String, err: String) {
        let output = CapturedOutput()
        let status = Reconcilectl.main(arguments: ["--config", configPath] + arguments, environment: environment, output: output, now: { now })
        return (status, output.standardOutput.replacingOccurrences(of: directory.path, with: "<dir>"),
                output.standardError.replacingOccurrences(of: directory.path, with: "<dir>"))
    }
}

/// Compares output with a snapshot in `Tests/ReconcileCLITests/Snapshots/`; `RECORD_SNAPSHOTS=1`
/// writes them instead.
func matchesSnapshot(_ text: String, _ name: String) -> Bool {
    let path = Fixtures.repositoryRoot + "/Tests/ReconcileCLITests/Snapshots/\(name).txt"
    if ProcessInfo.processInfo.environment["RECORD_SNAPSHOTS"] == "1" {
        try? FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        return FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    }
    guard let expected = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else { return false }
    return expected == text
}
