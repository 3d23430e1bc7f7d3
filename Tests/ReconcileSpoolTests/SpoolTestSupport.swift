import Foundation
import Glibc
import ReconcileCore
import ReconcileSpool
import ReconcileStore
import TestSupport

/// A spool and a store in one temporary directory.
struct SpoolFixture {
    let directory = TemporaryDirectory(prefix: "spool")
    var layout: SpoolLayout { SpoolLayout(root: directory.file("spool")) }

    init() {
        try! SpoolLayout(root: directory.file("spool")).prepare()
    }

    func store() throws -> SQLiteOrderStore {
        try FileManager.default.createDirectory(atPath: directory.file("state"), withIntermediateDirectories: true)
        return try SQLiteOrderStore(path: directory.file("state/orders.db"), mode: .owner)
    }

    /// Places a file the way producers must: written in tmp/, renamed into incoming/.
    @discardableResult
    func drop(_ name: String, _ text: String) -> String {
        drop(name, bytes: Array(text.utf8))
    }

    @discardableResult
    func drop(_ name: String, bytes: [UInt8]) -> String {
        let temporary = directory.write("spool/tmp/\(name)", bytes: bytes)
        let target = layout.incoming + "/" + name
        precondition(rename(temporary, target) == 0)
        return target
    }

    var incoming: [String] { directory.list("spool/incoming") }
    var rejected: [String] { directory.list("spool/rejected") }

    func reason(_ name: String) -> String? { directory.read("spool/rejected/\(name).reason") }
}
