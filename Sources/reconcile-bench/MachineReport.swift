import Foundation
import Glibc

/// What the figures were measured on, printed before them: processor, cores, memory, kernel,
/// and the filesystem and raw fsync rate where the scenarios keep their state.
enum MachineReport {
    static func make(_ options: BenchmarkOptions) throws -> BenchmarkReport {
        var report = BenchmarkReport(scenario: "machine")
        let root = try options.makeDirectory("machine")
        defer { try? FileManager.default.removeItem(atPath: root) }
        report.add("cores online", Double(sysconf(Int32(_SC_NPROCESSORS_ONLN))), "")
        report.add("memory", Double(sysconf(Int32(_SC_PHYS_PAGES))) * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_073_741_824, "GiB")
        report.add("disk fsync rate", DiskProbe.fsyncRate(in: root), "fsync/s")
        report.notes.append("processor: \(processor)")
        var name = utsname()
        uname(&name)
        let release = withUnsafeBytes(of: &name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        report.notes.append("kernel: Linux \(release)")
        report.notes.append("state under \(options.baseDirectory) on \(DiskProbe.filesystem(of: root)); every commit is fsynced (synchronous=FULL)")
        return report
    }

    static var processor: String {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let line = info.split(separator: "\n").first { $0.hasPrefix("model name") }
        return line.flatMap { $0.split(separator: ":", maxSplits: 1).last }.map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
    }
}
