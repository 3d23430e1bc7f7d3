/// Rules for text that reaches a log line, a terminal row, an environment variable or a reason
/// file: what counts as a control or format character, and excerpts bounded in Unicode scalars
/// (never in `Character`s: one grapheme cluster can hold any number of combining marks).
public enum PrintableText {
    /// C0 and C1 controls, DEL, and the Unicode line and paragraph separators.
    public static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }

    /// Format characters (general category Cf): bidi overrides and isolates (U+202A–U+202E,
    /// U+2066–U+2069), zero-width characters, the byte-order mark, soft hyphen. Invisible, and
    /// able to reorder what a terminal shows around them.
    public static func isFormat(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .format
    }

    /// A combining mark (general categories Mn, Mc, Me): it joins the character before it.
    public static func isCombiningMark(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: true
        default: false
        }
    }

    /// `text` with control and format characters replaced by `replacement`, cut to
    /// `maximumScalars` Unicode scalars (then ending in `…`).
    public static func excerpt(_ text: String, maximumScalars: Int, replacement: Unicode.Scalar = " ") -> String {
        var result = String.UnicodeScalarView()
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < maximumScalars else {
                result.append("…")
                break
            }
            result.append(isControl(scalar) || isFormat(scalar) ? replacement : scalar)
            count += 1
        }
        return String(result)
    }

    /// `U+202E`: how a scalar is named in an error message.
    public static func codePoint(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
