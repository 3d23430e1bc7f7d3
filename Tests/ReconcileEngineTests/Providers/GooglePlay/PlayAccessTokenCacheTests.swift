import Foundation
import ReconcileCore
import ReconcileCrypto
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The access token cache (DESIGN §5 "Google Play"): one grant for everyone waiting, the token
/// kept until five minutes before it expires, a refused grant a configuration error.
@Suite("Google Play: the access token cache")
struct PlayAccessTokenCacheTests {
    static let tokenURL = "https://oauth2.test/token"

    /// Answers every grant with a new token once `release` opens, counting them.
    final class SlowTokenServer: HTTPTransport {
        let release: AsyncLatch
        let status: Int
        let grants = Mutex(0)

        init(release: AsyncLatch = AsyncLatch(open: true), status: Int = 200) {
            self.release = release
            self.status = status
        }

        func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
            let number = grants.withLock { $0 += 1; return $0 }
            await release.wait()
            let body = status == 200
                ? #"{"access_token":"ya29.test-\#(number)","expires_in":3600,"token_type":"Bearer"}"#
                : #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#
            return answer(status, body, headers: [HTTPHeader("Content-Type", "application/json")])
        }

        var count: Int { grants.withLock { $0 } }
    }

    func cache(_ transport: SlowTokenServer) async throws -> PlayAccessTokenCache {
        let account = try await TestServiceAccount.make()
        return PlayAccessTokenCache(
            account: try GoogleServiceAccount(json: Array(account.json.utf8)),
            endpoint: EndpointSettings(url: Self.tokenURL, timeout: .seconds(5)), transport: transport)
    }

    @Test("twenty callers at once: one grant, one token for all; then hits from memory")
    func oneRefreshInFlight() async throws {
        let release = AsyncLatch()
        let server = SlowTokenServer(release: release)
        let tokens = try await cache(server)
        let gate = RecordingGate()
        let answers = await withTaskGroup(of: String?.self) { group in
            for _ in 0..<20 { group.addTask { try? await tokens.token(gate: gate).token.get() } }
            // The grant is held until the other nineteen wait for it.
            let allWaiting = await eventually(timeout: .seconds(20)) { await tokens.statistics.joined == 19 }
            #expect(allWaiting, "not every caller waited for the one grant")
            release.open()
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(server.count == 1, "\(server.count) grants for one expiry")
        #expect(Set(answers) == ["ya29.test-1"])
        for _ in 0..<10 { _ = await tokens.token(gate: gate) }
        #expect(server.count == 1)
        let statistics = await tokens.statistics
        #expect(statistics.refreshes == 1 && statistics.joined == 19 && statistics.hits >= 10 && statistics.failures == 0)
    }

    @Test("kept until five minutes before it expires; then, and after Google refused it, replaced")
    func refreshMargin() async throws {
        let server = SlowTokenServer()
        let tokens = try await cache(server)
        let gate = RecordingGate()
        #expect(try await tokens.token(gate: gate).token.get() == "ya29.test-1")
        // The token's life is counted from when its grant came back, which was before this (a
        // starved run may take seconds to get here: the 10 s of slack below are for that).
        let start = Date()
        #expect(try await tokens.token(gate: gate, now: start.addingTimeInterval(3600 - 310)).token.get() == "ya29.test-1")
        #expect(try await tokens.token(gate: gate, now: start.addingTimeInterval(3600 - 290)).token.get() == "ya29.test-2")
        await tokens.invalidate("ya29.test-1")  // an old token: the current one stays
        #expect(try await tokens.token(gate: gate).token.get() == "ya29.test-2")
        await tokens.invalidate("ya29.test-2")
        #expect(try await tokens.token(gate: gate).token.get() == "ya29.test-3")
        #expect(server.count == 3)
    }

    @Test("a refused grant (invalid_grant) is a configuration error of googleplay-token, never a token")
    func refused() async throws {
        let server = SlowTokenServer(status: 400)
        let tokens = try await cache(server)
        let gate = RecordingGate()
        let answer = await tokens.token(gate: gate)
        guard case .failure(.configuration(let reason)) = answer.token else {
            Issue.record("not a configuration error: \(answer.token)")
            return
        }
        #expect(reason.code == .tokenHTTP(400, error: "invalid_grant"))
        #expect(gate.reports.withLock { $0.contains { $0.0 == .googlePlayToken } })
        #expect(await tokens.statistics.failures == 1)
    }
}
