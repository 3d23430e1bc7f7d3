import Foundation
import Testing
import TestSupport
@testable import ReconcileCore

/// Reason codes are an outside contract: the words are stored, printed and logged, so the
/// factories must build the exact words, the printed form must read back, and the operator's
/// documentation (`docs/operating.md`, "Reason codes") must list every fixed code and no other.
@Suite("Reason codes")
struct ReasonCodeTests {
    /// The first cells of the table under "| code | meaning |", without their backticks.
    static func documentedCodes() throws -> [String] {
        let text = try String(contentsOfFile: Fixtures.repositoryRoot + "/docs/operating.md", encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let header = lines.firstIndex(of: "| code | meaning |") else { return [] }
        var codes: [String] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cell = line.dropFirst().prefix { $0 != "|" }.trimmingCharacters(in: .whitespaces)
            codes.append(cell.trimmingCharacters(in: CharacterSet(charactersIn: "`")))
        }
        return codes
    }

    @Test("docs/operating.md lists every fixed reason code, and no fixed code the daemon lacks")
    func documentation() throws {
        let documented = try Self.documentedCodes()
        #expect(!documented.isEmpty, "no \"| code | meaning |\" table in docs/operating.md")
        // Families are written with a placeholder (`http_<status>`); the rest are fixed codes.
        let fixed = Set(documented.filter { !$0.contains("<") })
        let known = Set(ReasonCode.all.map(\.rawValue))
        #expect(known.subtracting(fixed).sorted() == [], "codes missing from the table in docs/operating.md")
        #expect(fixed.subtracting(known).sorted() == [], "codes in docs/operating.md that ReasonCode.all lacks")
        #expect(documented.count == Set(documented).count, "a code is listed twice")
    }

    @Test("every fixed code is listed once, in snake case")
    func fixedCodes() {
        #expect(ReasonCode.all.count == Set(ReasonCode.all).count)
        for code in ReasonCode.all {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }, "\(code)")
        }
    }

    @Test("the factories build the exact words")
    func factories() {
        #expect(ReasonCode.http(503).rawValue == "http_503")
        #expect(ReasonCode.httpRedirectNotFollowed(301).rawValue == "http_301_redirect_not_followed")
        #expect(ReasonCode.appStore(4000006).rawValue == "appstore_4000006")
        #expect(ReasonCode.appStoreHTTP(503).rawValue == "appstore_http_503")
        #expect(ReasonCode.appStoreHTTP(418, errorCode: 4000000).rawValue == "appstore_http_418_4000000")
        #expect(ReasonCode.apple(21005).rawValue == "apple_21005")
        #expect(ReasonCode.appleNotRetryable(21100).rawValue == "apple_21100_not_retryable")
        #expect(ReasonCode.appleAfterBounce(21007).rawValue == "apple_21007_after_bounce")
        #expect(ReasonCode.appleNoSandboxURL(21007).rawValue == "apple_21007_no_sandbox_url")
        #expect(ReasonCode.appleStatus(21199).rawValue == "apple_status_21199")
        #expect(ReasonCode.merchantHTTP(418).rawValue == "merchant_http_418")
        #expect(ReasonCode.endpointHTTP(.delivery, 422).rawValue == "delivery_http_422")
        #expect(ReasonCode.endpointHTTP(.revocation, 422).rawValue == "revocation_http_422")
        #expect(ReasonCode.play(410, googleReason: "purchaseTokenNoLongerValid").rawValue == "play_410_purchaseTokenNoLongerValid")
        #expect(ReasonCode.play(404).rawValue == "play_404")
        #expect(ReasonCode.playHTTP(503, googleReason: "backend Error!").rawValue == "play_http_503_backendError")
        #expect(ReasonCode.playHTTPRedirectNotFollowed(302).rawValue == "play_http_302_redirect_not_followed")
        #expect(ReasonCode.tokenHTTP(400, error: "invalid_grant").rawValue == "token_http_400_invalid_grant")
        #expect(ReasonCode.tokenHTTPRedirectNotFollowed(302).rawValue == "token_http_302_redirect_not_followed")
        #expect(ReasonCode.endpointCircuitOpen(.googlePlayToken).rawValue == "googleplay-token_circuit_open")
        #expect(ReasonCode.transport(.connectionRefused) == .connectionRefused)
        #expect(ReasonCode.transport(.other).rawValue == "transport_error")
        #expect(ReasonCode.operatorAction(.hold) == .hold)
        #expect(ReasonCode.requested(.hold).rawValue == "hold_requested")
        #expect(ReasonCode.notApplied(.retry).rawValue == "retry_not_applied")
        #expect(ReasonCode.revocationReversedBefore(.refunded).rawValue == "refunded_reversed_before")
        #expect(ReasonCode.notificationSuperseded(.revoked).rawValue == "revoked_superseded")
        #expect(ReasonCode.notificationIgnored(.refundReversed).rawValue == "refund_reversed_ignored")
        #expect(ReasonCode.storeFailure(.diskFull).rawValue == "disk_full")
        #expect(ReasonCode.overdue(.playAcknowledge).rawValue == "play_acknowledge_overdue")
    }

    @Test("the printed form reads back as the same reason; an unknown stored code is kept")
    func roundTrip() {
        let reasons = [
            Reason(.http(404), detail: "no such endpoint (check the URL)"),
            Reason(.appStore(4000006)),
            Reason(.duplicateTransaction, detail: "transaction 7 is claimed by order A1: twice"),
            Reason(.maxAttempts, detail: "10 attempts reached MaxAttempts (last: http_503)"),
        ]
        for reason in reasons {
            #expect(Reason(parsing: reason.description) == reason)
        }
        #expect(Reason(.http(503)).description == "http_503")
        #expect(Reason(.http(404), detail: "no such endpoint").description == "http_404: no such endpoint")
        let stored = Reason(parsing: "retired_code_of_an_older_version: its detail")
        #expect(stored.code == ReasonCode(rawValue: "retired_code_of_an_older_version"))
        #expect(stored.detail == "its detail")
        #expect(stored.description == "retired_code_of_an_older_version: its detail")
    }
}
