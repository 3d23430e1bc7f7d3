/// The rules for an Android package name (`package_name` in an order file, `[GooglePlay]
/// PackageName=`): at least two segments joined by `.`, each starting with an ASCII letter and
/// made of ASCII letters, digits and `_`; at most 255 bytes.
public enum AndroidPackageName {
    public static let maximumLength = 255

    /// What is wrong with `text` as a package name (the value itself is not quoted), or `nil`.
    public static func problem(_ text: String) -> String? {
        guard !text.isEmpty else { return "is empty" }
        guard text.utf8.count <= maximumLength else {
            return "is \(text.utf8.count) bytes long; at most \(maximumLength) are allowed"
        }
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2 else {
            return "is not an Android package name: it needs at least two segments joined by '.', such as com.example.app"
        }
        for (index, segment) in segments.enumerated() {
            guard let first = segment.unicodeScalars.first else {
                return "is not an Android package name: segment \(index + 1) is empty"
            }
            guard ("A"..."Z").contains(first) || ("a"..."z").contains(first) else {
                return "is not an Android package name: segment \(index + 1) must start with a letter"
            }
            for scalar in segment.unicodeScalars {
                switch scalar {
                case "A"..."Z", "a"..."z", "0"..."9", "_": continue
                default:
                    return "is not an Android package name: only letters, digits and '_' may form a segment (segment \(index + 1))"
                }
            }
        }
        return nil
    }

    /// Whether `text` is a valid package name.
    public static func isValid(_ text: String) -> Bool { problem(text) == nil }
}
