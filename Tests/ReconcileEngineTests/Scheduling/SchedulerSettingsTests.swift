import Foundation
import ReconcileCore
import Testing
import TestSupport
@testable import ReconcileEngine

/// Which configured verifier takes which work: each says what it verifies, the settings pick by
/// that, never by a verifier's type.
@Suite("Scheduler settings: work to verifiers")
struct SchedulerSettingsTests {
    /// A verifier of receipts that is no merchant endpoint (a stand-in for Apple's).
    struct ReceiptVerifier: OrderVerifier {
        var firstEndpoint: VerificationEndpoint { .production }
        func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
            VerifierOutcome(records: [], verdict: .notSent(Reason(ReasonCode(rawValue: "test"))))
        }
    }

    func senders(_ verifier: (any OrderVerifier)?, delivery: Bool) -> Scheduler.Senders {
        let endpoint = EndpointSettings(url: "https://merchant.example/deliver", timeout: .seconds(5))
        return Scheduler.Senders(verifier: verifier, delivery: delivery ? DeliveryClient(endpoint: endpoint, transport: ScriptedTransport([:])) : nil)
    }

    @Test("a merchant endpoint (Kind=http) verifies Google Play orders too when no [GooglePlay] does; another verifier does not")
    func playOrdersWithoutGooglePlay() {
        let merchant = MerchantVerifier(
            endpoint: EndpointSettings(url: "https://merchant.example/verify", timeout: .seconds(5)), transport: ScriptedTransport([:]))
        let withMerchant = senders(merchant, delivery: true)
        #expect(withMerchant.verifier(for: .verify) is MerchantVerifier)
        #expect(withMerchant.verifier(for: .verifyPlay) is MerchantVerifier)
        #expect(withMerchant.verifier(for: .deliver) is DeliveryClient)

        let withReceipts = senders(ReceiptVerifier(), delivery: false)
        #expect(withReceipts.verifier(for: .verify) is ReceiptVerifier)
        #expect(withReceipts.verifier(for: .verifyPlay) == nil, "a receipt verifier was given Google Play orders")
        #expect(withReceipts.verifier(for: .deliver) == nil)

        let playOnly = senders(nil, delivery: false)
        #expect(playOnly.verifier(for: .verify) == nil)
        #expect(playOnly.verifier(for: .verifyPlay) == nil)
    }
}
