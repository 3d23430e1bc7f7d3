import CLinux
import Foundation
import Glibc
import ReconcileCore
import ReconcileSystem

/// Moves a spool file the daemon cannot accept into `rejected/`, with `NAME.reason` beside it
/// saying exactly what was wrong. The reason is written (and synced) before the file moves, so
/// a file is never in `rejected/` without its reason.
public struct Quarantine: Sendable {
    public let layout: SpoolLayout

    public init(layout: SpoolLayout) {
        self.layout = layout
    }

    /// Moves `incoming/NAME` to `rejected/`, under NAME or, when taken, NAME.1, NAME.2, …
    ///
    /// A reason without its file is what a crash between the two steps leaves; its name is
    /// reused (the reason is rewritten).
    ///
    /// - Returns: the name it has in `rejected/`.
    @discardableResult
    public func reject(_ name: String, problem: OrderFileProblem, orderID: String? = nil, now: Date) throws(SystemError) -> String {
        var target = name
        var suffix = 0
        while FileSystem.exists("\(layout.rejected)/\(target)") {
            suffix += 1
            target = "\(name).\(suffix)"
        }
        try FileSystem.writeAtomically("\(layout.rejected)/\(target).reason", Self.reasonText(name, problem: problem, orderID: orderID, now: now))
        let source = "\(layout.incoming)/\(name)"
        let destination = "\(layout.rejected)/\(target)"
        try FileSystem.renameWithoutReplacing(source, to: destination)
        try FileSystem.syncDirectory(layout.rejected)
        return target
    }

    /// Removes what a crash in the middle of writing a reason leaves behind: the daemon's own
    /// temporary files (`.NAME.reason.<pid>.<n>.tmp`) in `rejected/`.
    ///
    /// - Returns: the names removed.
    @discardableResult
    public func removeLeftovers() -> [String] {
        guard let names = try? FileSystem.listDirectory(layout.rejected) else { return [] }
        let leftovers = names.filter { $0.hasPrefix(".") && $0.hasSuffix(".tmp") && $0.contains(".reason.") }
        for name in leftovers { unlink("\(layout.rejected)/\(name)") }
        return leftovers
    }

    /// The reason file: `key: value` lines, for people and for `grep`.
    static func reasonText(_ name: String, problem: OrderFileProblem, orderID: String?, now: Date) -> [UInt8] {
        var text = "file: \(printable(name))\n"
        text += "rejected_at: \(RFC3339.format(now))\n"
        text += "reason: \(problem.code.rawValue)\n"
        if let orderID { text += "order_id: \(orderID)\n" }
        text += "detail: \(printable(problem.detail))\n"
        return Array(text.utf8)
    }

    /// A file name may hold newlines and control characters; the reason file shows them as '?'.
    static func printable(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : Character($0) })
    }
}
