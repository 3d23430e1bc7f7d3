import ReconcileCore
import Testing

@Suite("STATUS= line")
struct ServiceStatusLineTests {
    @Test("the three watched counts always, zeros included, and a closed circuit")
    func idle() {
        let line = ServiceStatusLine(counts: [:], circuits: [.init(endpoint: "production", state: "closed")])
        #expect(line.description == "pending=0 verifying=0 escalated=0 circuit=closed")
    }

    @Test("waiting, verified and held only when there are some; finished and the rest never")
    func optionalCounts() {
        let line = ServiceStatusLine(
            counts: [.pending: 12, .verifying: 3, .escalated: 1, .held: 2, .verified: 0, .finished: 900, .rejected: 4],
            circuits: [])
        #expect(line.description == "pending=12 verifying=3 escalated=1 held=2 circuit=closed")
    }

    @Test("each circuit that is not closed is named with its state")
    func troubledCircuits() {
        let line = ServiceStatusLine(
            counts: [.pending: 5],
            circuits: [
                .init(endpoint: "production", state: "open"), .init(endpoint: "sandbox", state: "closed"),
                .init(endpoint: "delivery", state: "half-open"),
            ])
        #expect(line.description == "pending=5 verifying=0 escalated=0 circuit=open(production),half-open(delivery)")
    }
}
