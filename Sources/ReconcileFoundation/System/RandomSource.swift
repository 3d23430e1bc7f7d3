/// Where jitter's randomness comes from: the system generator in the daemon, a seeded one in
/// tests (so that bounds and means can be checked exactly).
public protocol RandomSource: Sendable {
    /// A uniform value in `0..<1`.
    mutating func nextUnit() -> Double
}

/// The system's generator.
public struct SystemRandomSource: RandomSource {
    public init() {}

    public mutating func nextUnit() -> Double {
        Double.random(in: 0..<1)
    }
}

/// A small deterministic generator (SplitMix64), for tests and benchmarks; also a
/// `RandomNumberGenerator`, so a seeded run can be replayed from its seed.
public struct SeededRandomSource: RandomSource, RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func nextUInt64() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    public mutating func nextUnit() -> Double {
        Double(nextUInt64() >> 11) / Double(1 << 53)
    }

    public mutating func next() -> UInt64 {
        nextUInt64()
    }
}
