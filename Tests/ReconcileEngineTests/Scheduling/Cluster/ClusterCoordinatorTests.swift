import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore
import Synchronization
import Testing
import TestSupport
@testable import ReconcileEngine

/// The scheduler does what its ``ClusterCoordinator`` says, whichever store it runs on: a
/// scripted coordinator on an SQLite store holds claims back, changes the share and drops
/// leases it did not renew, each at a clock time the test sets.
@Suite("Cluster coordinator")
struct ClusterCoordinatorTests {
    let turns = SchedulerTurnTests()

    /// What the scripted coordinator answers next; the test changes it between turns.
    final class Script: Sendable {
        struct State {
            var holdUntil: ContinuousClock.Instant?
            var liveNodes = 1
            var pendingChange: (before: Int, now: Int)?
            var renew: Set<Int64>?
            var heldAsked: Set<Int64> = []
            var left = false
        }
        let state = Mutex(State())
    }

    /// A coordinator whose every answer comes from its ``Script``.
    struct ScriptedCoordinator: ClusterCoordinator {
        let script: Script
        var leaseOwner: String? { "scripted/1" }
        var share: Double { ClusterTiming.share(liveNodes: script.state.withLock { $0.liveNodes }) }
        var clockOffset: TimeInterval { 0 }
        var leavesUnconfiguredWorkToOthers: Bool { true }
        var othersEndAttempts: Bool { true }

        mutating func coordinate(
            mono: ContinuousClock.Instant, timing: ClusterTiming, report: () -> NodeReport, held: () -> Set<Int64>
        ) throws -> ClusterPass {
            let leases = held()
            return script.state.withLock { state in
                state.heldAsked = leases
                defer { state.pendingChange = nil; state.renew = nil }
                return ClusterPass(nextWake: nil, liveNodesChanged: state.pendingChange, renewed: state.renew)
            }
        }

        mutating func allowsClaims(mono: ContinuousClock.Instant, timing: ClusterTiming, wakeTimes: inout [ContinuousClock.Instant]) -> Bool {
            guard let hold = script.state.withLock({ $0.holdUntil }), mono < hold else { return true }
            wakeTimes.append(hold)
            return false
        }

        func allowsStarts(mono: ContinuousClock.Instant, timing: ClusterTiming) -> Bool { true }
        mutating func hostClockStepped(by step: TimeInterval) -> Bool { true }
        func leave() { script.state.withLock { $0.left = true } }
        func status(maxInFlight: Int) -> SchedulerStatus.Cluster? {
            SchedulerStatus.Cluster(
                node: "scripted", liveNodes: script.state.withLock { $0.liveNodes }, share: share, maxInFlight: maxInFlight, rescued: 0,
                lastHeartbeat: nil)
        }
    }

    @Test("while the coordinator holds claims back nothing is leased, and the turn wakes at the end of the hold")
    func holdingBack() async throws {
        let script = Script()
        let hold = turns.clock.instant() + .seconds(2)
        script.state.withLock { $0.holdUntil = hold }
        let (store, scheduler, verifier) = try turns.setUp(orders: 2, maxInFlight: 2, coordinator: ScriptedCoordinator(script: script))
        #expect(await scheduler.turn() == hold)
        #expect(try store.countsByState() == [.pending: 2])
        #expect(verifier.started.isEmpty)

        turns.clock.advance(by: .seconds(2))
        _ = await scheduler.turn()
        #expect(try store.countsByState() == [.verifying: 2])
        await turns.waitUntil("both attempts started") { verifier.started.count == 2 }
        await verifier.releaseAll(scheduler)
    }

    @Test("a change in live nodes takes the new share of MaxInFlight; the status is the coordinator's")
    func share() async throws {
        let script = Script()
        let (_, scheduler, verifier) = try turns.setUp(orders: 0, maxInFlight: 8, coordinator: ScriptedCoordinator(script: script))
        _ = await scheduler.turn()
        #expect(await scheduler.maxInFlight(.main) == 8)
        script.state.withLock { state in
            state.liveNodes = 4
            state.pendingChange = (1, 4)
        }
        _ = await scheduler.turn()
        #expect(await scheduler.maxInFlight(.main) == 2)
        let cluster = try #require(await scheduler.status().cluster)
        #expect(cluster.node == "scripted" && cluster.liveNodes == 4 && cluster.maxInFlight == 2)
        #expect(scheduler.owner == "scripted/1")
        await verifier.releaseAll(scheduler)
    }

    @Test("work leased ahead whose lease the coordinator did not renew is dropped, never sent")
    func unrenewedLeases() async throws {
        let script = Script()
        let (store, scheduler, verifier) = try turns.setUp(orders: 4, maxInFlight: 2, coordinator: ScriptedCoordinator(script: script))
        _ = await scheduler.turn()
        await turns.waitUntil("two attempts in flight") { verifier.started.count == 2 }
        // Two running and one leased ahead: the next pass is asked to renew all three.
        #expect(try store.countsByState() == [.verifying: 3, .pending: 1])
        let running = await scheduler.held
        let leasedAhead = Set(await scheduler.ready.compactMap(\.orderReference))
        #expect(running.count == 2 && leasedAhead.count == 1)
        script.state.withLock { $0.renew = running }
        _ = await scheduler.turn()
        #expect(script.state.withLock { $0.heldAsked } == running.union(leasedAhead))
        // The same turn leases the next order ahead in its place.
        let nowAhead = Set(await scheduler.ready.compactMap(\.orderReference))
        #expect(nowAhead.count == 1 && nowAhead.isDisjoint(with: leasedAhead))
        // A freed slot takes the new one; the order that lost its lease is never sent.
        await verifier.finish("O00", .granted(Grant(transactionID: "T0"), finishedBy: .merchant), gate: scheduler)
        await turns.waitUntil("the order leased in its place started") { verifier.started.count == 3 }
        #expect(verifier.started == ["O00", "O01", "O03"])
        await verifier.releaseAll(scheduler)
    }

    @Test("a single daemon's coordinator: the whole limits, its own clock, nothing left to others")
    func solo() {
        var solo = SoloCoordinator()
        var wakeTimes: [ContinuousClock.Instant] = []
        let timing = ClusterTiming(leaseTime: .seconds(120))
        #expect(solo.allowsClaims(mono: .now, timing: timing, wakeTimes: &wakeTimes) && wakeTimes.isEmpty)
        #expect(solo.share == 1 && solo.clockOffset == 0 && solo.leaseOwner == nil)
        #expect(!solo.leavesUnconfiguredWorkToOthers && !solo.hostClockStepped(by: -3600))
        #expect(solo.status(maxInFlight: 4) == nil)
    }
}
