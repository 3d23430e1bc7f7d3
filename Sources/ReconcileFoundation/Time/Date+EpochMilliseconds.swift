import Foundation

extension Date {
    /// Milliseconds since 1970 UTC, rounded down: how the store keeps times and how Apple's and
    /// Google's APIs write them.
    public var epochMilliseconds: Int64 {
        Int64((timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The date of a time in milliseconds since 1970 UTC.
    public init(epochMilliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(epochMilliseconds) / 1000)
    }
}
