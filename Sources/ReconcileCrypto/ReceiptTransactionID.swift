import CCrypto
import Foundation

/// Takes a transaction id out of a legacy StoreKit receipt, to look the purchase up with the App
/// Store Server API (receipt migration). Nothing is verified here: the id is only a key for that
/// lookup, whose answer is signed and verified.
public enum ReceiptTransactionID {
    /// Receipt attribute types (Apple's "Receipt Fields").
    private static let inAppPurchaseType: Int64 = 17
    private static let transactionIDType: Int64 = 1703
    private static let originalTransactionIDType: Int64 = 1705

    /// The transaction id in a base64 app receipt (PKCS#7 SignedData whose content is an ASN.1
    /// SET of attributes `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`;
    /// attribute 17 is an in-app purchase, itself such a SET), or `nil` when the receipt holds no
    /// in-app purchase.
    ///
    /// Which id, as Apple's own server library chooses (ReceiptUtility.extractTransactionId(
    /// appReceipt:), in apple/app-store-server-library-swift): it walks all attributes in their
    /// encoded order and keeps replacing its answer, so the answer comes from the last in-app
    /// purchase, and within that from whichever of the transaction id (1703) or original
    /// transaction id (1705) attributes comes last. Either kind of id serves the API lookup. We
    /// differ in two small ways: an in-app purchase without an id does not erase an id found
    /// earlier, and an IA5String value is read as well as a UTF8String. Attributes of another
    /// shape are skipped, as there; a receipt whose structure cannot be read throws.
    public static func extract(fromAppReceipt base64: String) throws(ReceiptExtractionError) -> String? {
        let der = try decodeBase64(base64, what: "the app receipt")
        let content = try signedContent(of: der)
        var found: String?
        for attribute in try attributes(in: content, what: "the receipt payload") where attribute.type == inAppPurchaseType {
            if let id = try transactionID(inInAppPurchase: attribute.value) {
                found = id
            }
        }
        return found
    }

    /// The transaction id in an iOS 6-style transaction receipt: base64 of a text dictionary
    /// whose `"purchase-info" = "<base64>";` entry decodes to another one holding
    /// `"transaction-id" = "<id>";` (the same patterns Apple's library looks for). `nil` when
    /// either entry is absent.
    public static func extract(fromTransactionReceipt base64: String) throws(ReceiptExtractionError) -> String? {
        let receipt = try decodeText(base64, what: "the transaction receipt")
        guard let purchaseInfo = receipt.firstMatch(of: #/"purchase-info"\s+=\s+"([A-Za-z0-9+\/=]+)";/#)?.output.1 else {
            return nil
        }
        let info = try decodeText(String(purchaseInfo), what: "the receipt's purchase-info")
        guard let id = info.firstMatch(of: #/"transaction-id"\s+=\s+"([A-Za-z0-9+\/=]+)";/#)?.output.1 else { return nil }
        return String(id)
    }

    // MARK: - App receipt

    private struct Attribute {
        let type: Int64
        let value: [UInt8]
    }

    /// The pkcs7-data content of the PKCS#7 SignedData in `der`.
    private static func signedContent(of der: [UInt8]) throws(ReceiptExtractionError) -> [UInt8] {
        OpenSSLErrorQueue.clear()
        let message: UnsafeMutablePointer<PKCS7>? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS7(nil, &cursor, buffer.count)
        }
        guard let message else { throw .notPKCS7(OpenSSLErrorQueue.drain()) }
        defer { PKCS7_free(message) }
        guard reconcile_pkcs7_is_signed(message) == 1, let content = reconcile_pkcs7_signed_data_content(message) else {
            throw .noSignedContent
        }
        return contents(of: content)
    }

    /// The attributes in the DER SET `bytes`, skipping members that are not
    /// `SEQUENCE { INTEGER, INTEGER, OCTET STRING }`. Throws when `bytes` is not one whole SET.
    private static func attributes(in bytes: [UInt8], what: String) throws(ReceiptExtractionError) -> [Attribute] {
        guard let set = decodeCollection(bytes, set: true) else {
            throw .malformedPayload("\(what) is not one whole ASN.1 SET")
        }
        defer { reconcile_asn1_any_free(set) }
        var attributes: [Attribute] = []
        for index in 0..<reconcile_asn1_any_count(set) {
            guard let member = reconcile_asn1_any_value(set, index), ASN1_TYPE_get(member) == V_ASN1_SEQUENCE,
                let encoded = reconcile_asn1_type_string(member),
                let fields = decodeCollection(contents(of: encoded), set: false)
            else { continue }
            defer { reconcile_asn1_any_free(fields) }
            guard reconcile_asn1_any_count(fields) == 3,
                let typeField = reconcile_asn1_any_value(fields, 0), ASN1_TYPE_get(typeField) == V_ASN1_INTEGER,
                let valueField = reconcile_asn1_any_value(fields, 2), ASN1_TYPE_get(valueField) == V_ASN1_OCTET_STRING,
                let integer = reconcile_asn1_type_string(typeField), let value = reconcile_asn1_type_string(valueField)
            else { continue }
            var type: Int64 = 0
            guard ASN1_INTEGER_get_int64(&type, integer) == 1 else {
                // An attribute type beyond 64 bits: none of ours.
                OpenSSLErrorQueue.clear()
                continue
            }
            attributes.append(Attribute(type: type, value: contents(of: value)))
        }
        return attributes
    }

    /// The id in one in-app purchase entry (a SET of attributes): the last transaction id or
    /// original transaction id attribute whose value is a UTF8String or IA5String.
    private static func transactionID(inInAppPurchase bytes: [UInt8]) throws(ReceiptExtractionError) -> String? {
        var found: String?
        for attribute in try attributes(in: bytes, what: "an in-app purchase entry")
        where attribute.type == transactionIDType || attribute.type == originalTransactionIDType {
            guard let value = decode(attribute.value, with: { d2i_ASN1_TYPE(nil, &$0, $1) }, free: ASN1_TYPE_free) else { continue }
            defer { ASN1_TYPE_free(value) }
            let kind = ASN1_TYPE_get(value)
            guard kind == V_ASN1_UTF8STRING || kind == V_ASN1_IA5STRING, let string = reconcile_asn1_type_string(value) else { continue }
            found = String(decoding: Self.contents(of: string), as: UTF8.self)
        }
        return found
    }

    /// Runs an OpenSSL `d2i_…` function over all of `bytes`: `nil` when it fails or leaves bytes
    /// over (what it made is then released with `free`).
    private static func decode<Result>(
        _ bytes: [UInt8], with parse: (inout UnsafePointer<UInt8>?, Int) -> Result?, free: (Result) -> Void
    ) -> Result? {
        OpenSSLErrorQueue.clear()
        defer { OpenSSLErrorQueue.clear() }
        return bytes.withUnsafeBufferPointer { buffer -> Result? in
            guard let start = buffer.baseAddress else { return nil }
            var cursor: UnsafePointer<UInt8>? = start
            guard let result = parse(&cursor, buffer.count) else { return nil }
            guard let cursor, cursor - start == buffer.count else {
                free(result)
                return nil
            }
            return result
        }
    }

    /// A whole DER SET OF or SEQUENCE OF, as OpenSSL's stack of ASN1_TYPE.
    private static func decodeCollection(_ bytes: [UInt8], set: Bool) -> OpaquePointer? {
        decode(bytes, with: { set ? d2i_ASN1_SET_ANY(nil, &$0, $1) : d2i_ASN1_SEQUENCE_ANY(nil, &$0, $1) }, free: reconcile_asn1_any_free)
    }

    private static func contents(of string: UnsafePointer<ASN1_STRING>) -> [UInt8] {
        let count = Int(ASN1_STRING_length(string))
        guard count > 0, let data = ASN1_STRING_get0_data(string) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: count))
    }

    // MARK: - Base64 and text

    private static func decodeBase64(_ text: String, what: String) throws(ReceiptExtractionError) -> [UInt8] {
        // Receipts are often wrapped or carry a trailing newline: white space is ignored.
        let compact = text.filter { !$0.isWhitespace }
        guard !compact.isEmpty else { throw .empty }
        guard let data = Data(base64Encoded: compact) else { throw .notBase64(what) }
        guard !data.isEmpty else { throw .empty }
        return Array(data)
    }

    private static func decodeText(_ text: String, what: String) throws(ReceiptExtractionError) -> String {
        let bytes = try decodeBase64(text, what: what)
        guard let decoded = String(validating: bytes, as: UTF8.self) else { throw .notText(what) }
        return decoded
    }
}
