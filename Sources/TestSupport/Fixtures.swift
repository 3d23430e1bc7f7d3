import Foundation

/// Test data in `Tests/Fixtures/`.
public enum Fixtures {
    /// The repository's root directory.
    public static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// The bytes of `Tests/Fixtures/<relative>`.
    public static func bytes(_ relative: String) -> [UInt8] {
        let path = repositoryRoot + "/Tests/Fixtures/" + relative
        guard let data = FileManager.default.contents(atPath: path) else { fatalError("missing fixture \(path)") }
        return Array(data)
    }
}
