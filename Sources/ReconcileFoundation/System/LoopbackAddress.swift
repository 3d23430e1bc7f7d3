/// Recognises loopback hosts: the only places plain `http://` may go (DESIGN §5).
public enum LoopbackAddress {
    /// True for `localhost`, any address in 127.0.0.0/8 and `::1` (with or without brackets).
    public static func isLoopback(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return false }
        let values = octets.compactMap { octet -> Int? in
            guard !octet.isEmpty, octet.count <= 3, octet.allSatisfy(\.isASCII) else { return nil }
            return Int(octet).flatMap { (0...255).contains($0) ? $0 : nil }
        }
        return values.count == 4 && values[0] == 127
    }
}
