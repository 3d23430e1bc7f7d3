import Foundation
import Glibc
import ReconcileCore
import ReconcileSpool
import ReconcileStore
import ReconcileSQLite
import ReconcileSystem
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

    /// Places a file under a name of any bytes: written in tmp/, renamed into incoming/.
    @discardableResult
    func drop(_ name: SpoolFileName, bytes: [UInt8]) -> SpoolFileName {
        let temporary = directory.write("spool/tmp/.drop-\(UUID().uuidString)", bytes: bytes)
        // Relative to the directory: a name that is not UTF-8 does not survive a Swift String.
        let descriptor = open(layout.incoming, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        precondition(name.withCString { target in temporary.withCString { renameat(AT_FDCWD, $0, descriptor, target) } } == 0)
        return name
    }

    /// The names in incoming/, as bytes.
    var incomingNames: [SpoolFileName] { names(in: layout.incoming) }
    var rejectedNames: [SpoolFileName] { names(in: layout.rejected) }

    func names(in path: String) -> [SpoolFileName] {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY)
        defer { close(descriptor) }
        return ((try? FileSystem.listDirectoryEntries(descriptor: descriptor, path: path)) ?? []).map(SpoolFileName.init).sorted()
    }

    /// A file in rejected/, by its bytes.
    func readRejected(_ name: SpoolFileName) -> [UInt8]? {
        let directory = open(layout.rejected, O_RDONLY | O_DIRECTORY)
        defer { close(directory) }
        let descriptor = name.withCString { openat(directory, $0, O_RDONLY) }
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        return try? FileSystem.read(descriptor, limit: 1 << 20) ?? nil
    }

    var incoming: [String] { directory.list("spool/incoming") }
    var rejected: [String] { directory.list("spool/rejected") }

    func reason(_ name: String) -> String? { directory.read("spool/rejected/\(name).reason") }
}
