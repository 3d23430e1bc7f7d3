import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

/// `[Revocation]` (DESIGN §5a, §9): the same keys as `[Delivery]`, parsed and checked by the same
/// rules, its problems naming file, line and key.
@Suite("Configuration: [Revocation]")
struct RevocationConfigurationTests {
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

    @Test("absent by default; every key read, a relative path resolved against its file; Timeout= defaults to 10s")
    func keys() throws {
        let none = try parse("")
        #expect(none.revocation.url == nil && none.revocation.token == nil && none.revocation.caFile == nil)
        #expect(none.revocation.timeout == .seconds(10))

        let configured = try parse("""
            [Revocation]
            URL=https://backend.example/iap/revoke
            TokenCredential=revocation-token
            CAFile=ca/merchant.pem
            Timeout=3s
            """)
        #expect(configured.revocation.url?.absoluteString == "https://backend.example/iap/revoke")
        #expect(configured.revocation.token == .credential("revocation-token"))
        #expect(configured.revocation.caFile == "/etc/reconciled/ca/merchant.pem")
        #expect(configured.revocation.timeout == .seconds(3))
        #expect(configured.delivery == Configuration.DeliverySettings(), "[Delivery] is untouched")

        let file = try parse("[Revocation]\nURL=http://127.0.0.1:8080/revoke\nTokenFile=token")
        #expect(file.revocation.token == .file("/etc/reconciled/token"))
    }

    @Test("bad values are refused with the delivery's messages, naming file, line and key")
    func badValues() {
        // Line numbers: minimalApple has five lines; [Revocation] is line 6, its first key line 7.
        #expect(problems("[Revocation]\nURL=http://backend.example/revoke") == [
            "\(Self.path):7: [Revocation] URL=: http:// is allowed only to loopback addresses (127.0.0.1, ::1, localhost); use https://"
        ])
        #expect(problems("[Revocation]\nURL=https://user:secret@backend.example/revoke") == [
            "\(Self.path):7: [Revocation] URL=: credentials may not be written into a URL; use a credential file"
        ])
        #expect(problems("[Revocation]\nURL=ftp://backend.example/revoke") == [
            "\(Self.path):7: [Revocation] URL=: \"ftp://backend.example/revoke\" must be an https:// URL"
        ])
        #expect(problems("[Revocation]\nTimeout=5ms") == [
            "\(Self.path):7: [Revocation] Timeout=: \"5ms\" is too short; the minimum is 10ms"
        ])
        #expect(problems("[Revocation]\nTokenCredential=../token") == [
            "\(Self.path):7: [Revocation] TokenCredential=: \"../token\" is not a credential name (a file name in $CREDENTIALS_DIRECTORY, without '/')"
        ])
        #expect(problems("[Revocation]\nURL=https://b.example/r\nTokenCredential=t\nTokenFile=/etc/t") == [
            "\(Self.path):9: [Revocation] TokenFile=: set either TokenCredential= or TokenFile=, not both"
        ])
        #expect(problems("[Revocation]\nUrl=https://b.example/r") == ["\(Self.path):7: [Revocation] Url=: unknown key; did you mean URL=?"])
    }

    @Test("the same messages as [Delivery]'s for the same bad value: one key builder for both sections")
    func sameRulesAsDelivery() {
        for value in ["URL=http://backend.example/x", "URL=not a url", "Timeout=forever", "TokenCredential=a/b", "CAFile=a\u{0}b"] {
            let delivery = problems("[Delivery]\n\(value)").map { $0.replacingOccurrences(of: "[Delivery]", with: "[Section]") }
            let revocation = problems("[Revocation]\n\(value)").map { $0.replacingOccurrences(of: "[Revocation]", with: "[Section]") }
            #expect(!delivery.isEmpty && delivery == revocation, "\(value)")
        }
    }

    @Test("on a shared store the lease must outlast twice [Revocation] Timeout= when it has a URL")
    func leaseTime() {
        let shared = "[State]\nDatabase=postgresql://r@db.example/reconcile\nLeaseTime=20s\n"
        #expect(problems(shared + "[Revocation]\nURL=https://b.example/r\nTimeout=15s") == [
            "\(Self.path):8: [State] LeaseTime=: must be at least twice [Revocation] Timeout= (15s): an attempt renews its lease at half of it"
        ])
        #expect(problems(shared + "[Revocation]\nTimeout=15s").isEmpty, "without a URL nothing is sent: its time-out does not count")
    }
}
