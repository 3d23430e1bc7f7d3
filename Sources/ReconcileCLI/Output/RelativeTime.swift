import Foundation
import ReconcileCore
import ReconcileFoundation

/// Times for people: "in 4m", "2h ago", "now".
enum RelativeTime {
    static func describe(_ date: Date, now: Date) -> String {
        let seconds = date.timeIntervalSince(now)
        if abs(seconds) < 1 { return "now" }
        let magnitude = abs(seconds)
        let text: String
        switch magnitude {
        case ..<60: text = "\(Int(magnitude))s"
        case ..<3600: text = "\(Int(magnitude / 60))m"
        case ..<(48 * 3600): text = "\(Int(magnitude / 3600))h"
        default: text = "\(Int(magnitude / 86_400))d"
        }
        return seconds > 0 ? "in \(text)" : "\(text) ago"
    }

    /// The age of something that happened at `date`: "3h".
    static func age(_ date: Date, now: Date) -> String {
        let described = describe(date, now: now)
        return described.hasSuffix(" ago") ? String(described.dropLast(4)) : (described == "now" ? "0s" : described)
    }

    /// When something is next due: "in 28s (…)", or for a time already past (orders due and
    /// held back by a circuit, the rate or the in-flight limit) "due now, for 46s (…)" — never
    /// "46s ago", which reads as an attempt that happened.
    static func due(_ date: Date, now: Date) -> String {
        guard date.timeIntervalSince(now) <= -1 else { return both(date, now: now) }
        return "due now, for \(age(date, now: now)) (\(RFC3339.format(date)))"
    }

    /// "in 28s (2026-11-30T07:26:34Z)".
    static func both(_ date: Date, now: Date) -> String {
        "\(describe(date, now: now)) (\(RFC3339.format(date)))"
    }
}
