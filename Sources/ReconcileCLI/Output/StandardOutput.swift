import Foundation
import Glibc

/// Where `reconcilectl` writes: results to standard output, errors to standard error. A
/// protocol so that tests capture both streams.
public protocol CommandOutput {
    func out(_ text: String)
    func err(_ text: String)
    /// Whether standard output is a terminal (colour).
    var isTerminal: Bool { get }
    /// Whether standard error is a terminal (progress lines).
    var errorIsTerminal: Bool { get }
}

/// The process's standard output and standard error.
public struct StandardOutput: CommandOutput {
    public init() {}

    public func out(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    public func err(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    public var isTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
    public var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// Captures both streams in memory, for tests.
public final class CapturedOutput: CommandOutput {
    public private(set) var standardOutput = ""
    public private(set) var standardError = ""
    public var isTerminal: Bool
    public var errorIsTerminal: Bool

    public init(isTerminal: Bool = false, errorIsTerminal: Bool = false) {
        self.isTerminal = isTerminal
        self.errorIsTerminal = errorIsTerminal
    }

    public func out(_ text: String) { standardOutput += text }
    public func err(_ text: String) { standardError += text }
}
