/// Why no transaction id could be taken out of a receipt. The messages name the structure that
/// was wrong, never the receipt's bytes.
public enum ReceiptExtractionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The receipt is empty.
    case empty
    /// The receipt (or its `purchase-info`) is not base64.
    case notBase64(String)
    /// The decoded app receipt is not a PKCS#7 message; OpenSSL's reason.
    case notPKCS7(String)
    /// The PKCS#7 message is not SignedData, or carries no pkcs7-data content.
    case noSignedContent
    /// The signed content is not the receipt's ASN.1 structure; what was wrong.
    case malformedPayload(String)
    /// A transaction receipt whose decoded bytes are not UTF-8 text.
    case notText(String)

    public var description: String {
        switch self {
        case .empty: "the receipt is empty"
        case .notBase64(let what): "\(what) is not base64"
        case .notPKCS7(let reason): "the app receipt is not a PKCS#7 message: \(reason)"
        case .noSignedContent: "the app receipt is not PKCS#7 SignedData with data content"
        case .malformedPayload(let what): "the app receipt's payload is malformed: \(what)"
        case .notText(let what): "\(what) is not UTF-8 text"
        }
    }
}
