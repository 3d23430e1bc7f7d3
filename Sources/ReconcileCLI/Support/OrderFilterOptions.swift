import Foundation
import ReconcileCore
import ReconcileFoundation
import ReconcileStore

/// The filters `list` takes, shared by the bulk verbs (`retry`, `hold`, `release`, `cancel`):
/// `--state` (repeatable), `--product`, `--reason`, `--older-than`, `--store` (DESIGN §10).
enum OrderFilterOptions {
    static let names = ["state", "product", "reason", "older-than", "store"]

    static var options: [OptionSpec] {
        [
            OptionSpec(long: "state", short: "s", valueName: "state", help: "Only orders in this state; repeat for several.", repeatable: true),
            OptionSpec(long: "product", short: "p", valueName: "id", help: "Only orders of this product."),
            OptionSpec(long: "reason", short: nil, valueName: "code", help: "Only orders whose last reason is this code (e.g. max_attempts)."),
            OptionSpec(long: "older-than", short: nil, valueName: "span", help: "Only orders taken in longer ago than this (e.g. 1h, 3d)."),
            OptionSpec(long: "store", short: nil, valueName: "store", help: "Only orders of this store: app_store or google_play."),
        ]
    }

    /// Whether any filter was given.
    static func given(_ arguments: ParsedArguments) -> Bool {
        names.contains { !arguments.allValues($0).isEmpty }
    }

    /// The filter the options describe; `limit` as given.
    static func filter(_ arguments: ParsedArguments, command: String, now: Date, limit: Int) throws -> OrderFilter {
        var filter = OrderFilter(limit: limit)
        filter.states = try arguments.allValues("state").map { try ArgumentChecks.state($0, command: command) }
        filter.productID = arguments.value("product")
        filter.reason = arguments.value("reason")
        if let store = arguments.value("store") {
            guard let value = PurchaseStore(rawValue: store) else {
                throw CommandLineError.usage("Invalid value '\(store)' for '--store <store>'; use app_store or google_play", command: command)
            }
            filter.store = value
        }
        if let span = arguments.value("older-than") {
            guard let duration = TimeSpan.parse(span) else {
                throw CommandLineError.usage("Invalid value '\(span)' for '--older-than <span>'; use e.g. 30min, 1h, 3d", command: command)
            }
            filter.receivedBefore = now.addingTimeInterval(-duration.inSeconds)
        }
        return filter
    }
}
