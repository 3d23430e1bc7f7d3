import ReconcileStore
import CPostgres
import Foundation

/// A libpq connection string (URI or `key=value` form) as libpq itself reads it
/// (`PQconninfoParse`), so that what is shown of it is what libpq would use, with every secret
/// option (libpq marks them with display character `*`: `password`, `sslpassword`) as `***`.
///
/// Redacting from libpq's own parse rather than by scanning the text is the point: libpq reads a
/// URI's user info up to its `@` (a `?` in the password does not end it) and percent-decodes query
/// keys (`?%70assword=x` sets the password), which no scanner kept in step.
struct PostgreSQLConnectionString {
    /// One option set in the string, in libpq's order of options.
    struct Option: Equatable {
        var keyword: String
        var value: String
        var isSecret: Bool
    }

    /// The options the string sets; `nil` when libpq cannot parse it.
    let options: [Option]?
    /// Whether it is a URI (`postgresql://`, `postgres://`), which libpq tells by its prefix.
    let isURI: Bool

    init(_ text: String) {
        isURI = text.hasPrefix("postgresql://") || text.hasPrefix("postgres://")
        var message: UnsafeMutablePointer<CChar>?
        guard let parsed = PQconninfoParse(text, &message) else {
            if let message { PQfreemem(message) }
            options = nil
            return
        }
        defer { PQconninfoFree(parsed) }
        var found: [Option] = []
        var entry = parsed
        while let keyword = entry.pointee.keyword {
            if let value = entry.pointee.val {
                let display = entry.pointee.dispchar.map { String(cString: $0) } ?? ""
                found.append(Option(keyword: String(cString: keyword), value: String(cString: value), isSecret: display.contains("*")))
            }
            entry += 1
        }
        options = found
    }

    /// The values of the secret options (to take out of libpq's messages).
    var secrets: [String] { (options ?? []).filter { $0.isSecret && !$0.value.isEmpty }.map(\.value) }

    /// The string rebuilt from libpq's parse with every secret as `***`: a URI stays a URI, a
    /// `key=value` string stays one. One libpq cannot parse is not shown at all.
    var redacted: String {
        guard let options else { return "(a connection string libpq cannot parse)" }
        let shown = options.map { option in
            var option = option
            if option.isSecret { option.value = "***" }
            return option
        }
        return isURI ? Self.uri(shown) : shown.map { "\($0.keyword)=\($0.isSecret ? "***" : Self.quoted($0.value))" }.joined(separator: " ")
    }

    private static func uri(_ options: [Option]) -> String {
        func take(_ keyword: String) -> String? { options.first { $0.keyword == keyword }?.value }
        let user = take("user"), password = take("password"), host = take("host"), port = take("port"), dbname = take("dbname")
        var query: [String] = []
        var text = "postgresql://"
        if let user, !user.isEmpty {
            text += encoded(user) + (password != nil ? ":***" : "") + "@"
        } else if password != nil {
            query.append("password=***")
        }
        // A plain host name or address (and a plain port) goes in the authority; anything else
        // (a socket directory, several hosts, an IPv6 address) goes in the query as libpq has it.
        let plainHost = host.map { !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._".contains($0)) } } ?? true
        let plainPort = port.map { $0.allSatisfy { $0.isASCII && $0.isNumber } } ?? true
        if plainHost && plainPort {
            text += (host ?? "") + (port.map { $0.isEmpty ? "" : ":\($0)" } ?? "")
        } else {
            if let host { query.append("host=" + encoded(host)) }
            if let port { query.append("port=" + encoded(port)) }
        }
        text += "/" + (dbname.map(encoded) ?? "")
        for option in options where !["user", "password", "host", "port", "dbname"].contains(option.keyword) {
            query.append(option.keyword + "=" + (option.isSecret ? "***" : encoded(option.value)))
        }
        return query.isEmpty ? text : text + "?" + query.joined(separator: "&")
    }

    /// Percent-encodes all but RFC 3986's unreserved characters.
    private static func encoded(_ value: String) -> String {
        value.utf8.map { byte in
            let scalar = Unicode.Scalar(byte)
            return byte < 0x80 && (CharacterSet.alphanumerics.contains(scalar) || "-._~".unicodeScalars.contains(scalar))
                ? String(Character(scalar)) : String(format: "%%%02X", byte)
        }.joined()
    }

    /// A `key=value` value, single-quoted (with `\` escapes) when it is empty or holds a space,
    /// a quote or a backslash.
    private static func quoted(_ value: String) -> String {
        guard value.isEmpty || value.contains(where: { $0.isWhitespace || $0 == "'" || $0 == "\\" }) else { return value }
        return "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}
