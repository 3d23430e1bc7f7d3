import Foundation
import Testing
@testable import ReconcileCore
import ReconcileFoundation

@Suite("Backoff")
struct BackoffTests {
    let policy = Backoff(initialDelay: .seconds(30), multiplier: 2, maxDelay: .seconds(3600), jitter: .none)

    @Test("capped exponential growth")
    func growth() {
        let bases = (1...9).map { policy.base(afterAttempt: $0).inSeconds }
        #expect(bases == [30, 60, 120, 240, 480, 960, 1920, 3600, 3600])
        #expect(policy.base(afterAttempt: 10_000).inSeconds == 3600)
    }

    @Test("full jitter stays in [0, d] with mean d/2", arguments: [1, 3, 8])
    func fullJitter(attempt: Int) {
        var random = SeededRandomSource(seed: 42)
        var full = policy
        full.jitter = .full
        let base = policy.base(afterAttempt: attempt).inSeconds
        let samples = (0..<20_000).map { _ in full.delay(afterAttempt: attempt, random: &random).inSeconds }
        #expect(samples.allSatisfy { $0 >= 0 && $0 <= base })
        let mean = samples.reduce(0, +) / Double(samples.count)
        #expect(abs(mean - base / 2) < base * 0.01, "mean \(mean) for base \(base)")
        #expect(samples.min()! < base * 0.01)
        #expect(samples.max()! > base * 0.99)
    }

    @Test("equal jitter stays in [d/2, d] with mean 3d/4")
    func equalJitter() {
        var random = SeededRandomSource(seed: 7)
        var equal = policy
        equal.jitter = .equal
        let samples = (0..<20_000).map { _ in equal.delay(afterAttempt: 4, random: &random).inSeconds }
        #expect(samples.allSatisfy { $0 >= 120 && $0 <= 240 })
        let mean = samples.reduce(0, +) / Double(samples.count)
        #expect(abs(mean - 180) < 2)
    }

    @Test("no jitter is exact")
    func noJitter() {
        var random = SeededRandomSource(seed: 1)
        #expect(policy.delay(afterAttempt: 3, random: &random) == .seconds(120))
    }

    @Test("Retry-After raises the delay, capped at MaxDelay, with a little spread on top")
    func retryAfter() {
        var random = SeededRandomSource(seed: 3)
        var full = policy
        full.jitter = .full
        let samples = (0..<5_000).map { _ in full.delay(afterAttempt: 1, retryAfter: .seconds(600), random: &random).inSeconds }
        #expect(samples.allSatisfy { $0 >= 600 && $0 <= 603 })  // spread: a tenth of the 30 s base
        let capped = (0..<1_000).map { _ in full.delay(afterAttempt: 1, retryAfter: .seconds(86_400), random: &random).inSeconds }
        #expect(capped.allSatisfy { $0 == 3600 })
        // A Retry-After shorter than the backoff changes nothing.
        var exact = policy
        exact.jitter = .none
        #expect(exact.delay(afterAttempt: 5, retryAfter: .seconds(10), random: &random) == .seconds(480))
    }

    @Test("the seeded source is deterministic and uniform")
    func seeded() {
        var a = SeededRandomSource(seed: 9)
        var b = SeededRandomSource(seed: 9)
        #expect((0..<10).map { _ in a.nextUnit() } == (0..<10).map { _ in b.nextUnit() })
        var c = SeededRandomSource(seed: 10)
        let values = (0..<10_000).map { _ in c.nextUnit() }
        #expect(values.allSatisfy { $0 >= 0 && $0 < 1 })
        #expect(abs(values.reduce(0, +) / 10_000 - 0.5) < 0.01)
    }
}

@Suite("Retry policy")
struct RetryPolicyTests {
    let policy = RetryPolicy(
        backoff: Backoff(initialDelay: .seconds(30), multiplier: 2, maxDelay: .seconds(3600), jitter: .none),
        maxAttempts: 5, maxAge: .seconds(86_400))
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("retries with backoff until MaxAttempts, then escalates")
    func attempts() {
        var random = SeededRandomSource(seed: 1)
        #expect(policy.afterTransientFailure(attempts: 1, receivedAt: now, now: now, retryAfter: nil, circuitClosed: true, random: &random)
            == .retry(at: now + 30))
        #expect(policy.afterTransientFailure(attempts: 4, receivedAt: now, now: now, retryAfter: nil, circuitClosed: true, random: &random)
            == .retry(at: now + 240))
        #expect(policy.afterTransientFailure(attempts: 5, receivedAt: now, now: now, retryAfter: nil, circuitClosed: true, random: &random)
            == .escalate(reason: .maxAttempts))
    }

    @Test("age escalates only while the circuit is closed")
    func age() {
        var random = SeededRandomSource(seed: 1)
        let old = now - 90_000
        #expect(policy.afterTransientFailure(attempts: 1, receivedAt: old, now: now, retryAfter: nil, circuitClosed: true, random: &random)
            == .escalate(reason: .maxAge))
        #expect(policy.afterTransientFailure(attempts: 1, receivedAt: old, now: now, retryAfter: nil, circuitClosed: false, random: &random)
            == .retry(at: now + 30))
        #expect(policy.hasExpired(receivedAt: old, now: now))
        #expect(!policy.hasExpired(receivedAt: now - 10, now: now))
    }
}
