import Foundation
import ReconcileMock
import Synchronization

/// The mock's requests as they arrive: which order each was for, and when (wall clock, to
/// compare with due times in the store, and monotonic, to measure rates).
final class RequestLog: Sendable {
    struct Arrival {
        var orderID: String
        var wall: Date
        var instant: ContinuousClock.Instant
    }

    private let arrivals = Mutex<[Arrival]>([])

    /// The mock on loopback, every request it reads noted here first.
    static func mock() throws -> (RequestLog, MockHTTPServer) {
        let log = RequestLog()
        let service = MockService()
        let server = try MockHTTPServer { request in
            log.record(request)
            return service.handle(request)
        }
        return (log, server)
    }

    /// Notes a request (the merchant protocol's JSON body names the order).
    func record(_ request: ServerRequest) {
        let wall = Date(), instant = ContinuousClock.now
        let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        let orderID = object?["order_id"] as? String ?? "?"
        arrivals.withLock { $0.append(Arrival(orderID: orderID, wall: wall, instant: instant)) }
    }

    var count: Int { arrivals.withLock { $0.count } }
    var all: [Arrival] { arrivals.withLock { $0 } }

    func reset() { arrivals.withLock { $0.removeAll() } }

    /// Waits until `count` requests have arrived; false after `timeout`.
    func wait(for count: Int, timeout: Duration) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while self.count < count {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// The most arrivals within any one-second window (sliding, not aligned to seconds).
    static func peakPerSecond(_ instants: [ContinuousClock.Instant]) -> Int {
        let sorted = instants.sorted()
        var peak = 0, first = 0
        for last in sorted.indices {
            while sorted[last] - sorted[first] >= .seconds(1) { first += 1 }
            peak = max(peak, last - first + 1)
        }
        return peak
    }

    /// The value at fraction `q` (0...1) of sorted `values` (nearest rank).
    static func percentile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
