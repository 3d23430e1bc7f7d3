import Foundation

/// A fresh directory for one test, removed when the value is released.
public final class TemporaryDirectory: @unchecked Sendable {
    // @unchecked: `path` is immutable; deinit is the only other access.
    public let path: String

    /// Under `$TMPDIR` (on this project's machines, the real disk), unless `base` says otherwise.
    public init(prefix: String = "reconcile-test", base: String = NSTemporaryDirectory()) {
        let name = "\(prefix)-\(getpid())-\(UUID().uuidString.prefix(8))"
        path = (base.hasSuffix("/") ? base : base + "/") + name
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// `path/relative`.
    public func file(_ relative: String) -> String {
        path + "/" + relative
    }

    /// Writes a file (creating parent directories).
    @discardableResult
    public func write(_ relative: String, _ text: String) -> String {
        write(relative, bytes: Array(text.utf8))
    }

    @discardableResult
    public func write(_ relative: String, bytes: [UInt8]) -> String {
        let full = file(relative)
        try! FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        precondition(FileManager.default.createFile(atPath: full, contents: Data(bytes)), "cannot write \(full)")
        return full
    }

    /// The names in a subdirectory, sorted.
    public func list(_ relative: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: file(relative))) ?? []).sorted()
    }

    public func read(_ relative: String) -> String? {
        FileManager.default.contents(atPath: file(relative)).map { String(decoding: $0, as: UTF8.self) }
    }
}
