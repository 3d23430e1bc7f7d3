import Foundation
import Glibc

/// Measures the raw fsync rate of the disk under a directory: the ceiling for any durable
/// commit rate, printed beside every figure that depends on it.
enum DiskProbe {
    /// Appends 512 bytes and fsyncs, for `seconds`; returns fsyncs per second.
    static func fsyncRate(in directory: String, seconds: Double = 1) -> Double {
        let path = directory + "/fsync-probe"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { return 0 }
        defer {
            close(descriptor)
            unlink(path)
        }
        let block = [UInt8](repeating: 0x61, count: 512)
        let start = Date()
        var count = 0
        while Date().timeIntervalSince(start) < seconds {
            _ = block.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            fsync(descriptor)
            count += 1
        }
        return Double(count) / Date().timeIntervalSince(start)
    }

    /// Creates `count` files of 900 bytes, syncs them to disk (as producers must), then unlinks
    /// them from one directory with `threads` threads; returns unlinks per second. On a
    /// filesystem mounted with `discard`, each unlink waits for the device to discard the
    /// freed blocks: this is the ceiling for any spool ingest.
    static func unlinkRate(in directory: String, count: Int = 5_000, threads: Int) -> Double {
        let path = directory + "/unlink-probe"
        mkdir(path, 0o700)
        defer { rmdir(path) }
        let block = [UInt8](repeating: 0x61, count: 900)
        for index in 0..<count {
            let descriptor = open("\(path)/f\(index)", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            _ = block.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            close(descriptor)
        }
        sync()
        let start = Date()
        DispatchQueue.concurrentPerform(iterations: threads) { worker in
            for index in stride(from: worker, to: count, by: threads) { unlink("\(path)/f\(index)") }
        }
        return Double(count) / Date().timeIntervalSince(start)
    }

    /// The filesystem type of a directory (`ext4`, `tmpfs`), from /proc/self/mounts.
    static func filesystem(of directory: String) -> String {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "unknown" }
        var best = ("", "unknown")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count > 2 else { continue }
            let mountPoint = String(fields[1])
            if directory.hasPrefix(mountPoint) && mountPoint.count > best.0.count { best = (mountPoint, String(fields[2])) }
        }
        return best.1
    }
}
