// Fuzz target: configuration files as ConfigurationLoader hands them to ConfigurationParser
// (the main file, then drop-ins: the input's parts between 0xFF bytes), then what the daemon
// builds from a configuration it accepts: the retry policy's delays, the token bucket's waits
// and the circuit breaker's cool-downs, turned into Durations the way the scheduler does.
import Foundation
import ReconcileCore
import ReconcileFoundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfiguration(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ConfigurationTarget.run(inputBytes(data, size))
    return 0
}

enum ConfigurationTarget {
    static let mainPath = "/etc/reconciled/reconciled.conf"

    static func run(_ input: [UInt8]) {
        var sources: [ConfigurationSource] = []
        for (index, part) in splitAtFF(input).prefix(4).enumerated() {
            // The loader refuses a file that is not UTF-8 before parsing.
            guard UTF8Validation.firstInvalidOffset(in: part) == nil else { return }
            let path = index == 0 ? mainPath : "\(mainPath).d/\(10 + index)-fuzz.conf"
            sources.append(ConfigurationSource(path: path, text: String(decoding: part, as: UTF8.self)))
        }
        do {
            let configuration = try ConfigurationParser.parse(sources)
            checkAccepted(configuration)
        } catch {
            checkRefused(error, sources)
        }
    }

    static func checkRefused(_ error: ConfigurationError, _ sources: [ConfigurationSource]) {
        invariant(!error.problems.isEmpty, "an error without problems")
        // Lines as INIParser counts them: "\r\n" is one Character, so split on both forms.
        let lineCounts = Dictionary(
            sources.map { ($0.path, $0.text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r\n" }.count) },
            uniquingKeysWith: { first, _ in first })
        for problem in error.problems {
            guard let lines = lineCounts[problem.path] else {
                invariant(false, "a problem in a file that was not read: \(problem.path)")
                return
            }
            invariant(!problem.description.contains("\n"), "a problem spans lines: \(problem.description)")
            if let line = problem.line {
                invariant((1...max(1, lines)).contains(line), "line \(line) of a file of \(lines) lines")
            }
        }
    }

    static func checkAccepted(_ configuration: Configuration) {
        let verifier = configuration.verifier
        invariant(["https", "http"].contains(verifier.url.scheme?.lowercased() ?? ""), "a verifier URL that is not http(s)")
        invariant(verifier.circuitCooldown <= verifier.circuitMaxCooldown, "CircuitCooldown above CircuitMaxCooldown")
        invariant(configuration.retry.initialDelay <= configuration.retry.maxDelay, "InitialDelay above MaxDelay")
        invariant(configuration.spool.maxFileSize >= 64, "MaxFileSize below 64")
        invariant(verifier.kind != .apple || (verifier.bundleID != nil && verifier.sharedSecret != nil), "Kind=apple without its keys")
        _ = RestartOnlyKeys.changed(from: Configuration(), to: configuration)
        _ = verifier.effectiveSandboxURL?.absoluteString
        for span in [verifier.timeout, verifier.circuitCooldown, verifier.circuitMaxCooldown, configuration.retry.maxAge,
                     configuration.daemon.drainTimeout, configuration.escalation.timeout] {
            _ = TimeSpan.format(span)
        }

        checkRetry(configuration.retry)
        checkRate(maxRate: verifier.maxRate, burst: verifier.burst)
        // EscalationRunner spaces commands by 1 / CommandRate seconds.
        _ = TimeSpan.format(.seconds(1 / configuration.escalation.commandRate))
        checkCircuit(verifier)
    }

    /// RetryPolicy as AttemptResolver uses it: every delay lies within 0...MaxDelay.
    static func checkRetry(_ settings: Configuration.RetrySettings) {
        let policy = RetryPolicy(settings)
        let received = Date(timeIntervalSince1970: 1_764_487_566)
        for attempts in [1, 2, 64, 1000, settings.maxAttempts - 1] {
            for draw in [0.0, 0.999_999] {
                for retryAfter in [nil, Duration.seconds(1), .seconds(1_000_000_000_000)] {
                    var random = FixedRandom(value: draw)
                    let delay = policy.backoff.delay(afterAttempt: max(1, attempts), retryAfter: retryAfter, random: &random)
                    invariant(delay >= .zero && delay <= settings.maxDelay, "delay \(delay) outside 0...MaxDelay")
                    _ = TimeSpan.format(delay)
                    _ = policy.afterTransientFailure(
                        attempts: attempts, receivedAt: received, now: received.addingTimeInterval(60), retryAfter: retryAfter,
                        circuitClosed: true, random: &random)
                }
            }
        }
    }

    /// TokenBucket as the scheduler uses it (MaxRate, Burst): drained, the next token's time is
    /// an instant the scheduler sleeps until, never in the past, its wait a printable Duration.
    static func checkRate(maxRate: Double?, burst: Int) {
        let start = ContinuousClock.now
        var bucket = TokenBucket(rate: maxRate, burst: burst, now: start)
        var now = start
        for _ in 0..<min(burst + 1, 64) { _ = bucket.take(now: now) }
        for step in 0..<3 {
            let next = bucket.nextTokenTime(now: now)
            invariant(next >= now, "the next token is in the past")
            _ = TimeSpan.format(max(.milliseconds(1), next - now))
            now = next + .seconds(step)
            _ = bucket.take(now: now)
        }
    }

    /// CircuitBreaker as the scheduler builds it: opened, its cool-down becomes a Duration.
    static func checkCircuit(_ verifier: Configuration.VerifierSettings) {
        var circuit = CircuitBreaker(
            threshold: verifier.circuitThreshold, cooldown: verifier.circuitCooldown, maxCooldown: verifier.circuitMaxCooldown)
        var now = ContinuousClock.now
        for _ in 0..<4 {
            circuit.recordFailure(reason: Reason(ReasonCode(rawValue: "fuzz")), configurationError: true, now: now)
            _ = TimeSpan.format(circuit.currentCooldown)
            if case .blocked(let until?) = circuit.permission(now: now) { now = until }
            _ = circuit.permission(now: now)
            circuit.probeSent()
        }
    }
}
