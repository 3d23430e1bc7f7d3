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
        func configured(_ notifications: String) throws -> (Configuration, Scheduler.Settings, AppStoreNotificationPoller.Settings?) {
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
            return (configuration, configured.settings, configured.polling)
        }
        let (on, settings, polling) = try configured("ConsumptionAnswer=on\nCustomerConsented=yes\nRefundPreference=decline")
        #expect(settings.consumption.map(\.endpoint) == [.production, .sandbox])
        #expect(settings.consumption.map(\.api.url) == ["https://api.example/production", "https://api.example/sandbox"])
        #expect(polling?.consumption == on.notifications.consumption && polling?.consumption.refundPreference == .decline)
        #expect(Daemon.ingestSettings(on, NotificationFileReader(appStore: nil)).consumption == on.notifications.consumption)
        for text in ["ConsumptionAnswer=on\nCustomerConsented=no", "ConsumptionAnswer=off\nCustomerConsented=yes", ""] {
            let (_, settings, _) = try configured(text)
            #expect(settings.consumption.isEmpty, "\(text)")
        }
    }
}
