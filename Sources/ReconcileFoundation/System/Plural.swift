/// English counts for messages: "1 order", "2 orders".
public enum Plural {
    /// `count` and the noun, with an "s" unless the count is one.
    public static func count(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }
}
