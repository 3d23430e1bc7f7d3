/// The pure rules take monotonic instants and durations; their tests write both as numbers of
/// seconds — an instant as seconds after ``MonotonicOrigin/instant`` — so that a table of times
/// reads as one (`now: 5`, `until: 15`, `cooldown: 5`). Only in these tests.
enum MonotonicOrigin {
    /// Second 0 of every test here.
    static let instant = ContinuousClock.now
}

extension ContinuousClock.Instant: @retroactive ExpressibleByIntegerLiteral, @retroactive ExpressibleByFloatLiteral {
    public init(integerLiteral seconds: Int) {
        self = MonotonicOrigin.instant + .seconds(seconds)
    }

    public init(floatLiteral seconds: Double) {
        self = MonotonicOrigin.instant + .seconds(seconds)
    }

    /// Seconds after the origin.
    var secondsFromOrigin: Double {
        let (seconds, attoseconds) = (self - MonotonicOrigin.instant).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

extension Duration: @retroactive ExpressibleByIntegerLiteral, @retroactive ExpressibleByFloatLiteral {
    public init(integerLiteral seconds: Int) {
        self = .seconds(seconds)
    }

    public init(floatLiteral seconds: Double) {
        self = .seconds(seconds)
    }
}
