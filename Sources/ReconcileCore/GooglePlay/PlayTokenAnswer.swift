import Foundation
import ReconcileFoundation

/// The answer of Google's OAuth token endpoint to a JWT bearer grant
/// (`docs/protocols/google-play.md` §1): `{"access_token", "token_type", "expires_in"}` on 200, an error
/// object otherwise.
public struct PlayTokenAnswer: Sendable, Hashable {
    /// Never logged.
    public var accessToken: String
    /// Seconds (Google sends a number; a string of digits is accepted too).
    public var expiresIn: Int

    public init(accessToken: String, expiresIn: Int) {
        self.accessToken = accessToken
        self.expiresIn = expiresIn
    }

    /// What an exchange with the token endpoint means.
    public enum Verdict: Sendable, Hashable {
        /// 200 with an access token.
        case token(PlayTokenAnswer)
        /// The grant was refused (`invalid_grant`, 400/401): the key, its account, or our clock.
        case configuration(reason: Reason)
        /// Retry later; `endpointLevel` answers count towards the token endpoint's circuit.
        case transient(reason: Reason, endpointLevel: Bool, retryAfter: Duration? = nil, rateLimited: Bool = false)
    }

    /// Errors google-auth retries: the server's trouble, not ours.
    public static let transientErrors: Set<String> = ["internal_failure", "server_error", "temporarily_unavailable"]

    /// Classifies a token endpoint answer. The reason never carries the token or the assertion.
    public static func classify(status: Int, body: [UInt8], retryAfter: Duration?) -> Verdict {
        let object: JSONObject? = {
            guard case .object(let object)? = try? JSONParser(allowsDuplicateKeys: true).parse(body) else { return nil }
            return object
        }()
        let error = object?["error"]?.stringValue.map { PrintableText.excerpt($0, maximumScalars: 40) }
        let description = object?["error_description"]?.stringValue.map { PrintableText.excerpt($0, maximumScalars: 120) }
        switch status {
        case 200:
            guard let object else { return .transient(reason: Reason(.tokenUnparseableAnswer), endpointLevel: true) }
            guard object.members.count(where: { $0.key == "access_token" }) == 1,
                let token = object["access_token"]?.stringValue, !token.isEmpty
            else { return .transient(reason: Reason(.tokenAnswerWithoutAccessToken), endpointLevel: true) }
            guard token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }), token.utf8.count <= 8192 else {
                return .transient(reason: Reason(.tokenAnswerUnusableAccessToken), endpointLevel: true)
            }
            let expiresIn: Int
            switch object["expires_in"] {
            case .number(let text)?, .string(let text)?:
                guard let seconds = Int(text), seconds > 0, seconds <= 86_400 else {
                    return .transient(reason: Reason(.tokenAnswerBadExpiresIn), endpointLevel: true)
                }
                expiresIn = seconds
            case nil, .null?:
                expiresIn = 3600
            default:
                return .transient(reason: Reason(.tokenAnswerBadExpiresIn), endpointLevel: true)
            }
            return .token(PlayTokenAnswer(accessToken: token, expiresIn: expiresIn))
        case _ where error.map(transientErrors.contains) ?? false:
            return .transient(reason: Reason(.tokenHTTP(status, error: error)), endpointLevel: true, retryAfter: retryAfter)
        case 429:
            return .transient(reason: Reason(.tokenHTTP(429, error: error)), endpointLevel: true, retryAfter: retryAfter, rateLimited: true)
        case 408, 500...599:
            return .transient(reason: Reason(.tokenHTTP(status, error: error)), endpointLevel: true, retryAfter: retryAfter)
        case 300...399:
            return .transient(reason: Reason(.tokenHTTPRedirectNotFollowed(status)), endpointLevel: true)
        case 400, 401, 403:
            let hint = error == "invalid_grant"
                ? "(a deleted or rotated key, a disabled account, or this host's clock: check NTP)" : nil
            let detail = [description, hint].compactMap { $0 }.joined(separator: " ")
            return .configuration(reason: Reason(.tokenHTTP(status, error: error), detail: detail.isEmpty ? nil : detail))
        case 404:
            return .configuration(reason: Reason(.tokenHTTP(404), detail: "no such endpoint (check [GooglePlay] TokenURL= or the key's token_uri)"))
        default:
            return .configuration(reason: Reason(.tokenHTTP(status, error: error), detail: description))
        }
    }
}
