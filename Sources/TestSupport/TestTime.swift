import Foundation

/// How much longer than written a test may wait for something to happen.
///
/// A wait's time-out is only a bound for failing: `eventually` returns as soon as its condition
/// holds. Under AddressSanitizer and ThreadSanitizer every process runs several times slower, and
/// a whole run on a two-core machine starts every suite at once, so a bound sized for a plain
/// build runs out before a correct program gets there (CI saw a 30 s wait run out in a test that
/// took 80 s). `scripts/test-sanitized` sets `RECONCILE_TEST_TIME_SCALE`. It stretches the waits
/// for an event, and the part of an elapsed-time bound that is slack for a slow machine — never
/// the part that is the promise under test: a drain bound is `DrainTimeout` plus stretched slack
/// (`SpoolHardeningEndToEndTests.drainBound`), and a bound whose only alternative is waiting
/// forever (a missed wake-up) may stretch whole.
public enum TestTime {
    /// The factor from `RECONCILE_TEST_TIME_SCALE` (a number from 1 to 20; 1 when unset or not one).
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["RECONCILE_TEST_TIME_SCALE"],
            let value = Double(text), value >= 1, value <= 20
        else { return 1 }
        return value
    }()

    /// `duration` stretched by `scale`.
    public static func scaled(_ duration: Duration) -> Duration {
        scale == 1 ? duration : duration * scale
    }
}
