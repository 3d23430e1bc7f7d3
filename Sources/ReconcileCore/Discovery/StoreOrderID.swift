import Foundation

/// The order id a customer finds on the store's e-mail receipt (DESIGN §5b), which support asks
/// the store about: the App Store's `MK5TTV4XYZ`, Google Play's `GPA.3312-4455-6677-88990`. Not
/// the merchant's order id, and not a transaction id.
public enum StoreOrderID: Sendable, Hashable {
    case appStore(String)
    case googlePlay(String)

    /// Why a text is not a store order id.
    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// The longest id taken (Apple's are about 10 characters, Google's 24, or 27 with a
    /// renewal's `..N`).
    public static let maximumLength = 64

    /// Reads an id as a person typed or pasted it: `GPA.` starts a Google Play order, letters and
    /// digits alone an App Store one; surrounding white space is dropped.
    public static func parse(_ text: String) throws(Invalid) -> StoreOrderID {
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let example = "the App Store's look like MK5TTV4XYZ, Google Play's like GPA.3312-4455-6677-88990"
        guard !id.isEmpty else { throw Invalid(description: "the store order id is empty (\(example))") }
        guard id.utf8.count <= maximumLength else {
            throw Invalid(description: "the store order id is longer than \(maximumLength) characters (\(example))")
        }
        if id.uppercased().hasPrefix("GPA.") {
            let rest = id.utf8.dropFirst(4)
            guard !rest.isEmpty, rest.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }) else {
                throw Invalid(description: "\(OrderFileParser.quoted(id)) is not a Google Play order id: after GPA. come digits, - and . only")
            }
            return .googlePlay("GPA." + String(decoding: rest, as: UTF8.self))
        }
        guard id.utf8.allSatisfy({ isDigit($0) || ($0 | 0x20 >= UInt8(ascii: "a") && $0 | 0x20 <= UInt8(ascii: "z")) }) else {
            throw Invalid(description: "\(OrderFileParser.quoted(id)) is not a store order id (\(example))")
        }
        return .appStore(id.uppercased())
    }

    /// The id as the store spells it.
    public var id: String {
        switch self {
        case .appStore(let id), .googlePlay(let id): id
        }
    }

    public var store: PurchaseStore {
        switch self {
        case .appStore: .appStore
        case .googlePlay: .googlePlay
        }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
