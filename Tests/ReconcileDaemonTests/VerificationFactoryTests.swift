import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileDaemon
import ReconcileEngine
import ReconcileFoundation
import ReconcileSpool

/// What the daemon builds of a configuration: the verifiers, senders and pollers.
@Suite("Verification factory")
struct VerificationFactoryTests {
    let directory = TemporaryDirectory(prefix: "factory")

    func configuration(_ text: String) throws -> Configuration {
        try ConfigurationParser.parse([ConfigurationSource(path: directory.file("reconciled.conf"), text: text)])
    }

    /// A transport that is never used.
    struct NoTransport: HTTPTransport {
        func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
            HTTPExchangeResult(.failure(HTTPFailure(.connectionRefused, "not in this test")), latency: .zero)
        }
    }

    @Test("consumption answers: a sender per App Store environment with ConsumptionAnswer=on and CustomerConsented=yes, none otherwise; the spool's and the poller's policy is the configuration's")
    func consumptionSenders() async throws {
        let chain = try await TestCertificateChain.make()
        try Data(chain.rootDER).write(to: URL(fileURLWithPath: directory.file("root.der")))
        directory.write("iap.p8", try await TestCertificateChain.newKeyPEM())
        func configured(_ notifications: String) throws -> (Configuration, Scheduler.Senders, AppStoreNotificationPoller.Settings?) {
            let configuration = try configuration("""
                [Verifier]
                Kind=appstore
                URL=https://api.example/production
                SandboxURL=https://api.example/sandbox
                BundleID=com.example.app
                IssuerID=57246542-96fe-1a63-e053-0824d011072a
                KeyID=TESTKEY123
                PrivateKeyFile=iap.p8
                AppAppleID=1234567890
                RootCertificates=root.der
                [Notifications]
                \(notifications)
                """)
            let configured = try VerificationFactory.configured(for: configuration, environment: [:], transport: NoTransport())
            return (configuration, configured.senders, configured.polling)
        }
        let (on, senders, polling) = try configured("ConsumptionAnswer=on\nCustomerConsented=yes\nRefundPreference=decline")
        #expect(senders.consumption.map(\.endpoint) == [.production, .sandbox])
        #expect(senders.consumption.map(\.api.url) == ["https://api.example/production", "https://api.example/sandbox"])
        #expect(polling?.consumption == on.notifications.consumption && polling?.consumption.refundPreference == .decline)
        #expect(Daemon.ingestSettings(on, NotificationFileReader(appStore: nil)).consumption == on.notifications.consumption)
        for text in ["ConsumptionAnswer=on\nCustomerConsented=no", "ConsumptionAnswer=off\nCustomerConsented=yes", ""] {
            let (_, senders, _) = try configured(text)
            #expect(senders.consumption.isEmpty, "\(text)")
        }
    }
}

extension VerificationFactoryTests {
    @Test("the scheduler's settings are values: the same configuration read twice gives equal settings, a changed limit does not; Google Play's limits are its section's")
    func settingsAreValues() throws {
        directory.write("token", "t0ken\n")
        func settings(_ maxRate: String) throws -> Scheduler.Settings {
            let configuration = try configuration("""
                [Verifier]
                Kind=http
                URL=https://merchant.example/verify
                TokenFile=token
                MaxRate=\(maxRate)
                """)
            return try VerificationFactory.configured(for: configuration, environment: [:], transport: NoTransport()).settings
        }
        #expect(try settings("5") == settings("5"))
        #expect(try settings("5") != settings("6"))
        let section = try configuration("[GooglePlay]\nPackageName=com.example.app\nServiceAccountFile=sa.json\nMaxInFlight=3\nCircuitCooldown=7s\nMaxRate=9").googlePlay
        let limits = Scheduler.PoolLimits(section)
        #expect(limits.maxInFlight == 3 && limits.circuitCooldown == .seconds(7) && limits.maxRate == 9)
    }
}
