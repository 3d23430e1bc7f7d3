import Testing
@testable import ReconcileCore
import TestSupport

@Suite("Circuit breaker")
struct CircuitBreakerTests {
    @Test("threshold failures in a row open it; any healthy answer resets the count")
    func threshold() {
        var circuit = CircuitBreaker(threshold: 3, cooldown: 5, maxCooldown: 300)
        circuit.recordFailure(reason: "http_503", now: 0)
        circuit.recordFailure(reason: "http_503", now: 0)
        circuit.recordSuccess()
        circuit.recordFailure(reason: "http_503", now: 0)
        circuit.recordFailure(reason: "http_503", now: 0)
        #expect(circuit.isClosed)
        let change = circuit.recordFailure(reason: "http_503", now: 10)
        #expect(change == .opened(cooldown: 5, reason: "http_503"))
        let permission = circuit.permission(now: 12)
        #expect(permission == .blocked(until: 15))
    }

    @Test("an operator's --probe-now ends an open circuit's cool-down; --close closes any and restarts the count and the cool-down")
    func steering() {
        var circuit = CircuitBreaker(threshold: 2, cooldown: 5, maxCooldown: 300)
        var changed = circuit.steer(.probeNow, now: 0)
        #expect(!changed, "a closed circuit has nothing to cut short")
        circuit.recordFailure(reason: "timeout", now: 0)
        #expect(circuit.consecutiveFailures == 1 && circuit.lastFailure == "timeout" && circuit.lastReason == nil)
        circuit.recordFailure(reason: "timeout", now: 0)
        var permission = circuit.permission(now: 1)
        #expect(permission == .blocked(until: 5))
        changed = circuit.steer(.probeNow, now: 1)
        #expect(changed)
        permission = circuit.permission(now: 1)
        #expect(permission == .probe)
        circuit.probeSent()
        circuit.recordFailure(reason: "timeout", now: 2)  // re-opens, cool-down doubled to 10
        permission = circuit.permission(now: 3)
        #expect(permission == .blocked(until: 12))
        changed = circuit.steer(.close, now: 3)
        #expect(changed)
        #expect(circuit.isClosed && circuit.consecutiveFailures == 0)
        permission = circuit.permission(now: 3)
        #expect(permission == .allowed)
        circuit.recordFailure(reason: "timeout", now: 4)
        #expect(circuit.isClosed, "the count started again: one failure of two")
        circuit.recordFailure(reason: "timeout", now: 4)
        permission = circuit.permission(now: 5)
        #expect(permission == .blocked(until: 9), "the cool-down started again at 5")
        changed = circuit.steer(.close, now: 10)
        #expect(changed, "an open circuit closes")
        #expect(circuit.openings == 3)
    }

    @Test("one probe after the cool-down; success closes, failure re-opens with a doubled cool-down up to the maximum")
    func probes() {
        var circuit = CircuitBreaker(threshold: 1, cooldown: 5, maxCooldown: 30)
        circuit.recordFailure(reason: "timeout", now: 0)
        var permission = circuit.permission(now: 5)
        #expect(permission == .probe)
        circuit.probeSent()
        permission = circuit.permission(now: 6)
        #expect(permission == .blocked(until: nil))
        let change = circuit.recordFailure(reason: "timeout", now: 6)
        #expect(change == .reopened(cooldown: 10, reason: "timeout"))
        permission = circuit.permission(now: 15)
        #expect(permission == .blocked(until: 16))
        var cooldowns: [Duration] = []
        var now: ContinuousClock.Instant = 16
        for _ in 0..<4 {
            permission = circuit.permission(now: now)
            #expect(permission == .probe)
            circuit.probeSent()
            if case .reopened(let cooldown, _) = circuit.recordFailure(reason: "timeout", now: now) { cooldowns.append(cooldown) }
            now += .seconds(100)
        }
        #expect(cooldowns == [20, 30, 30, 30])
        permission = circuit.permission(now: now)
        #expect(permission == .probe)
        circuit.probeSent()
        let closed = circuit.recordSuccess()
        #expect(closed == .closed)
        permission = circuit.permission(now: now)
        #expect(permission == .allowed)
        circuit.recordFailure(reason: "timeout", now: now)
        permission = circuit.permission(now: now + .seconds(5))
        #expect(permission == .probe)  // the cool-down starts over
    }

    @Test("a configuration error opens it at once")
    func configuration() {
        var circuit = CircuitBreaker(threshold: 10, cooldown: 5, maxCooldown: 300)
        let change = circuit.recordFailure(reason: "apple_21004", configurationError: true, now: 0)
        #expect(change == .opened(cooldown: 5, reason: "apple_21004"))
        #expect(circuit.openings == 1)
    }

    @Test("a reload makes an open circuit half-open")
    func reset() {
        var circuit = CircuitBreaker(threshold: 1, cooldown: 60, maxCooldown: 300)
        circuit.recordFailure(reason: "x", now: 0)
        circuit.reset()
        let permission = circuit.permission(now: 1)
        #expect(permission == .probe)
    }

    @Test("late completions of requests sent before it opened change nothing")
    func late() {
        var circuit = CircuitBreaker(threshold: 1, cooldown: 60, maxCooldown: 300)
        circuit.recordFailure(reason: "x", now: 0)
        let failure = circuit.recordFailure(reason: "x", now: 1)
        let success = circuit.recordSuccess()
        let permission = circuit.permission(now: 2)
        #expect(failure == .none)
        #expect(success == .none)
        #expect(permission == .blocked(until: 60))
    }
}
