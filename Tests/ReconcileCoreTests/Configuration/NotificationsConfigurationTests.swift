import Foundation
import Testing
@testable import ReconcileCore

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
        #expect(problems("[Notifications]\nConsumptionAnswer=on").first?.hasPrefix("\(Self.path):7: [Notifications] ConsumptionAnswer=: unknown key") == true)
    }
}
