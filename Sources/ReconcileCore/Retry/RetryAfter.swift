import Foundation
import ReconcileFoundation

/// A server's `Retry-After` header (RFC 9110 §10.2.3): delta-seconds or an HTTP date. Apple's
/// App Store Server API sends a Unix time in milliseconds instead, which is told apart by size.
public enum RetryAfter {
    /// How long to wait, from `now`; `nil` for a value that is neither form.
    public static func parse(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let number = Int64(text) {
            if number > 1_000_000_000_000 {
                // Epoch milliseconds (App Store Server API).
                let wait = Double(number) / 1000 - now.timeIntervalSince1970
                return .milliseconds(Int64(max(0, wait) * 1000))
            }
            return .seconds(number)
        }
        guard let date = HTTPDate.parse(text) else { return nil }
        return .milliseconds(Int64(max(0, date.timeIntervalSince(now)) * 1000))
    }
}

/// HTTP dates (RFC 9110 §5.6.7): the IMF-fixdate form servers must send
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), plus the two obsolete forms recipients must accept.
public enum HTTPDate {
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    public static func parse(_ text: String) -> Date? {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "," }).map(String.init)
        var day: Int?
        var month: Int?
        var year: Int?
        var time: [Int]?
        switch words.count {
        case 4 where words[3] == "GMT" && words[1].contains("-"):
            // rfc850-date: Sunday, 06-Nov-94 08:49:37 GMT
            let parts = words[1].split(separator: "-")
            guard parts.count == 3 else { return nil }
            day = Int(parts[0])
            month = months.firstIndex(of: String(parts[1])).map { $0 + 1 }
            year = Int(parts[2]).map { $0 < 70 ? 2000 + $0 : ($0 < 100 ? 1900 + $0 : $0) }
            time = clock(words[2])
        case 6 where words[5] == "GMT":
            // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT (the comma is a separator too)
            day = Int(words[1])
            month = months.firstIndex(of: words[2]).map { $0 + 1 }
            year = Int(words[3])
            time = clock(words[4])
        case 5:
            // asctime-date: Sun Nov  6 08:49:37 1994
            month = months.firstIndex(of: words[1]).map { $0 + 1 }
            day = Int(words[2])
            time = clock(words[3])
            year = Int(words[4])
        default:
            return nil
        }
        guard let day, let month, let year, let time, (1...31).contains(day) else { return nil }
        let pad = { (value: Int, width: Int) -> String in
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return RFC3339.parse("\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(time[0], 2)):\(pad(time[1], 2)):\(pad(time[2], 2))Z")
    }

    static func clock(_ text: String) -> [Int]? {
        let parts = text.split(separator: ":").compactMap { Int($0) }
        return parts.count == 3 ? parts : nil
    }

    /// Formats a date as an IMF-fixdate.
    public static func format(_ date: Date) -> String {
        let iso = RFC3339.format(date)  // 2026-11-30T07:26:06Z
        let year = Int(iso.prefix(4))!
        let month = Int(iso.dropFirst(5).prefix(2))!
        let day = Int(iso.dropFirst(8).prefix(2))!
        let days = RFC3339.daysFromCivil(year: year, month: month, day: day)
        let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][((days % 7) + 7) % 7]
        return "\(weekday), \(iso.dropFirst(8).prefix(2)) \(months[month - 1]) \(year) \(iso.dropFirst(11).prefix(8)) GMT"
    }
}
