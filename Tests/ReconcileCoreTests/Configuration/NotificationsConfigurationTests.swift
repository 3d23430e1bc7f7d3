import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

/// `[Notifications] Poll=` (DESIGN §5a, §9): a time span, `1h` by default, `off` disables; a bad
/// value is refused naming file, line and key.
@Suite("Configuration: [Notifications]")
struct NotificationsConfigurationTests {
    static let path = "/etc/reconciled/reconciled.conf"

    func parse(_ text: String) throws(ConfigurationError) -> Configuration {
        try ConfigurationParser.parse([ConfigurationSource(path: Self.path, text: ConfigurationParserTests.minimalApple + "\n" + text)])
    }

    func problems(_ text: String) -> [String] {
        do {
            _ = try parse(text)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("Poll= defaults to 1h; a span is read; off turns polling off; the section alone is accepted")
    func poll() throws {
        #expect(try parse("").notifications.poll == .seconds(3600))
        #expect(try parse("[Notifications]").notifications.poll == .seconds(3600))
        #expect(try parse("[Notifications]\nPoll=15min").notifications.poll == .seconds(900))
        #expect(try parse("[Notifications]\nPoll=off").notifications.poll == nil)
    }

    @Test("a bad Poll= or an unknown key of [Notifications] is refused, naming file, line and key")
    func badValues() {
        // minimalApple has five lines; [Notifications] is line 6, its first key line 7.
        #expect(problems("[Notifications]\nPoll=often") == [
            "\(Self.path):7: [Notifications] Poll=: \"often\" is not a time span; use \(TimeSpan.acceptedUnitsDescription) or off"
        ])
        #expect(problems("[Notifications]\nPoll=500ms") == [
            "\(Self.path):7: [Notifications] Poll=: \"500ms\" is too short; the minimum is 1s"
        ])
        #expect(problems("[Notifications]\nPush=on").first?.hasPrefix("\(Self.path):7: [Notifications] Push=: unknown key") == true)
    }

    // MARK: - Consumption answers

    func parseAppStore(_ text: String) throws(ConfigurationError) -> Configuration {
        try ConfigurationParser.parse([ConfigurationSource(path: Self.path, text: ConfigurationParserTests.minimalAppStore + "\n" + text)])
    }

    @Test("the consumption keys default to off, no consent, no sample, no preference: nothing is answered")
    func consumptionDefaults() throws {
        let notifications = try parse("").notifications
        #expect(notifications.consumption == .off)
        #expect(notifications.consumption.answers == false)
    }

    @Test("ConsumptionAnswer=on with Kind=appstore: consent, sample and each preference spelling are read")
    func consumptionKeys() throws {
        let base = "[Notifications]\nConsumptionAnswer=on\nCustomerConsented=yes\nSampleContentProvided=yes\n"
        let policy = try parseAppStore(base + "RefundPreference=grant_full").notifications.consumption
        #expect(policy == ConsumptionPolicy(answer: true, customerConsented: true, sampleContentProvided: true, refundPreference: .grantFull))
        #expect(policy.answers)
        for (text, preference) in [
            ("decline", ConsumptionPolicy.RefundPreference.decline), ("DECLINE", .decline), ("grant_full", .grantFull), ("GRANT_FULL", .grantFull),
            ("Grant_Full", .grantFull),
        ] {
            #expect(try parseAppStore(base + "RefundPreference=\(text)").notifications.refundPreference == preference)
        }
        // Empty: reset to unset (not sent).
        #expect(try parseAppStore(base + "RefundPreference=decline\nRefundPreference=").notifications.refundPreference == nil)
        // On without consent is valid: the daemon records requests and answers none.
        let unconsented = try parseAppStore("[Notifications]\nConsumptionAnswer=on").notifications.consumption
        #expect(unconsented.answer && !unconsented.answers)
    }

    @Test("a bad consumption value is refused naming file, line and key")
    func badConsumptionValues() {
        // minimalApple has five lines; [Notifications] is line 6, its first key line 7.
        #expect(problems("[Notifications]\nRefundPreference=maybe") == [
            "\(Self.path):7: [Notifications] RefundPreference=: \"maybe\" is not a refund preference; use decline or grant_full (or leave it empty)"
        ])
        // Apple takes GRANT_PRORATED for auto-renewable subscriptions only (review).
        #expect(problems("[Notifications]\nRefundPreference=grant_prorated") == [
            "\(Self.path):7: [Notifications] RefundPreference=: grant_prorated is for auto-renewable subscriptions only, and Apple refuses an answer about another purchase that carries it; use decline or grant_full (or leave it empty)"
        ])
        #expect(problems("[Notifications]\nCustomerConsented=sure") == [
            "\(Self.path):7: [Notifications] CustomerConsented=: \"sure\" is not a boolean; use yes or no"
        ])
        #expect(problems("[Notifications]\nSampleContentProvided=2") == [
            "\(Self.path):7: [Notifications] SampleContentProvided=: \"2\" is not a boolean; use yes or no"
        ])
    }

    @Test("ConsumptionAnswer=on needs Kind=appstore: refused with Kind=apple, naming both keys")
    func consumptionNeedsAppStore() throws {
        #expect(problems("[Notifications]\nConsumptionAnswer=on\nCustomerConsented=yes") == [
            "\(Self.path):7: [Notifications] ConsumptionAnswer=: on needs [Verifier] Kind=appstore (its key signs the App Store Server API's token), not Kind=apple"
        ])
        // Off is fine with any Kind=.
        #expect(problems("[Notifications]\nConsumptionAnswer=off\nCustomerConsented=yes").isEmpty)
        // A Google Play-only daemon has no [Verifier] at all.
        let playOnly = """
            [GooglePlay]
            PackageName=com.example.app
            ServiceAccountFile=/etc/reconciled/play.json
            [Notifications]
            ConsumptionAnswer=on
            """
        do {
            _ = try ConfigurationParser.parse([ConfigurationSource(path: Self.path, text: playOnly)])
            Issue.record("a Google Play-only daemon with ConsumptionAnswer=on was accepted")
        } catch {
            #expect(error.problems.map(\.description) == [
                "\(Self.path):5: [Notifications] ConsumptionAnswer=: on needs [Verifier] Kind=appstore (its key signs the App Store Server API's token), and there is none"
            ])
        }
        #expect(try parseAppStore("[Notifications]\nConsumptionAnswer=on\nCustomerConsented=yes").notifications.consumptionAnswer)
    }
}
