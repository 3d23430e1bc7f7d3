import Foundation
import ReconcileCore
import ReconcileMock

// reconcile-mock: Apple verifyReceipt, merchant and delivery endpoints on loopback, for tests
// and benchmarks. See MockService for the paths and MockFaults for the faults.
exit(MockMain.run(Array(CommandLine.arguments.dropFirst())))
