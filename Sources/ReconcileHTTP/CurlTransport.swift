import CCurl
import Foundation
import ReconcileCore
import Synchronization

/// The daemon's ``HTTPTransport``: libcurl's multi interface on one thread of its own, so that
/// many requests are in flight at once over kept-alive connections.
///
/// What it guarantees, whatever the server does: TLS certificates are always verified (against
/// the system's bundle, plus `CAFile=` anchors); redirects are never followed; only `http` and
/// `https` are spoken; a request never takes longer than its time-out; an answer larger than
/// the request's cap is cut off and reported as `bodyTooLarge`. Every failure is a value.
public final class CurlTransport: HTTPTransport {
    private let loop: CurlMultiLoop

    /// - Parameter maximumConnections: connections kept open for reuse (at least the number of
    ///   requests in flight).
    public init(maximumConnections: Int = 128) {
        loop = CurlMultiLoop(maximumConnections: maximumConnections)
    }

    public func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
        await withCheckedContinuation { continuation in
            loop.submit(CurlTransfer(request: request, continuation: continuation))
        }
    }

    /// Forgets loaded `CAFile=` anchors, so that the next request reads them again (after a
    /// reload).
    public func reloadTrustAnchors() {
        loop.reloadTrustAnchors()
    }
}

/// One request on its way through libcurl. Touched only on the loop's thread, except for the
/// continuation, which is resumed exactly once.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: after `submit` hands it over, only the loop's thread touches it.
    let request: HTTPRequest
    let continuation: CheckedContinuation<HTTPExchangeResult, Never>
    var body: [UInt8] = []
    var headers: [HTTPHeader] = []
    var tooLarge = false
    /// libcurl writes its error text here; it must not move while the transfer runs.
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        buffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        return buffer
    }()
    var headerList: UnsafeMutablePointer<curl_slist>?
    var trustAnchors: TrustAnchorList?
    var started = ContinuousClock.now

    init(request: HTTPRequest, continuation: CheckedContinuation<HTTPExchangeResult, Never>) {
        self.request = request
        self.continuation = continuation
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }
}

/// Certificates read from a `CAFile=`, freed when no transfer uses them any more.
final class TrustAnchorList: @unchecked Sendable {
    // @unchecked: immutable after init; OpenSSL's X509 objects are reference counted.
    let certificates: [OpaquePointer?]

    init?(path: String) {
        var buffer = [OpaquePointer?](repeating: nil, count: 64)
        let count = reconcile_read_pem_certificates(path, &buffer, Int32(buffer.count))
        guard count > 0 else { return nil }
        certificates = Array(buffer.prefix(Int(count)))
    }

    deinit {
        for certificate in certificates { X509_free(certificate) }
    }
}

/// libcurl's multi handle and the thread that drives it.
final class CurlMultiLoop: @unchecked Sendable {
    // @unchecked: `multi` and `active` are used only on `thread`; the submission queue and the
    // trust-anchor cache are behind mutexes.
    private let multi: UnsafeMutableRawPointer
    private let submissions = Mutex<[CurlTransfer]>([])
    private let anchors = Mutex<[String: TrustAnchorList]>([:])
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    init(maximumConnections: Int) {
        _ = Self.globalInit
        multi = curl_multi_init()!
        _ = reconcile_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maximumConnections)
        let thread = Thread { [self] in self.run() }
        thread.name = "reconcile-http"
        thread.start()
    }

    func submit(_ transfer: CurlTransfer) {
        submissions.withLock { $0.append(transfer) }
        curl_multi_wakeup(multi)
    }

    func reloadTrustAnchors() {
        anchors.withLock { $0.removeAll() }
    }

    /// The loop: start submitted transfers, drive libcurl, finish completed transfers, and
    /// sleep in `curl_multi_poll` until there is work (indefinitely when nothing is in flight).
    private func run() {
        while true {
            let new = submissions.withLock { pending -> [CurlTransfer] in
                defer { pending.removeAll(keepingCapacity: true) }
                return pending
            }
            for transfer in new { start(transfer) }
            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var queued: Int32 = 0
            while let message = curl_multi_info_read(multi, &queued) {
                guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
                finish(easy, code: message.pointee.data.result)
            }
            var timeout: Int = -1
            curl_multi_timeout(multi, &timeout)
            let wait: Int32 = active.isEmpty ? 3_600_000 : Int32(clamping: timeout < 0 ? 1000 : min(timeout, 1000))
            curl_multi_poll(multi, nil, 0, wait, nil)
        }
    }

    private func start(_ transfer: CurlTransfer) {
        guard let easy = curl_easy_init() else {
            transfer.continuation.resume(returning: HTTPExchangeResult(.failure(HTTPFailure(.other, "curl_easy_init failed")), latency: .zero))
            return
        }
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_URL, request.url)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = reconcile_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, Int(max(1, request.timeout.totalMilliseconds)))
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_PRIVATE, context)
        _ = reconcile_curl_setopt_write_function(easy, CURLOPT_WRITEFUNCTION, curlWrite)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, context)
        _ = reconcile_curl_setopt_write_function(easy, CURLOPT_HEADERFUNCTION, curlHeader)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, context)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_CUSTOMREQUEST, request.method)
        if request.method == "POST" || !request.body.isEmpty {
            _ = reconcile_curl_setopt_long(easy, CURLOPT_POST, 1)
            _ = reconcile_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, request.body.count)
            request.body.withUnsafeBytes { buffer in
                // COPYPOSTFIELDS copies, so the bytes need not outlive this call.
                _ = reconcile_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
            }
        }
        // No "Expect: 100-continue": it costs a round trip, and not every server answers it.
        var list = curl_slist_append(nil, "Expect:")
        for header in request.headers {
            list = curl_slist_append(list, "\(header.name): \(header.value)")
        }
        transfer.headerList = list
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, list)
        if let caFile = request.caFile {
            transfer.trustAnchors = trustAnchors(caFile)
            _ = reconcile_curl_setopt_ssl_ctx_function(easy, curlSSLContext)
            _ = reconcile_curl_setopt_pointer(easy, CURLOPT_SSL_CTX_DATA, context)
        }
        transfer.started = ContinuousClock.now
        active[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    private func trustAnchors(_ path: String) -> TrustAnchorList? {
        if let cached = anchors.withLock({ $0[path] }) { return cached }
        let loaded = TrustAnchorList(path: path)
        if let loaded { anchors.withLock { $0[path] = loaded } }
        return loaded
    }

    private func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        curl_multi_remove_handle(multi, easy)
        defer { curl_easy_cleanup(easy) }
        guard let transfer = active.removeValue(forKey: easy) else { return }
        let latency = ContinuousClock.now - transfer.started
        if code == CURLE_OK {
            var status = 0
            _ = reconcile_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            let response = HTTPResponse(status: status, headers: transfer.headers, body: transfer.body)
            transfer.continuation.resume(returning: HTTPExchangeResult(.success(response), latency: latency))
            return
        }
        let detail = String(cString: transfer.errorBuffer)
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        let failure: HTTPFailure
        if transfer.tooLarge {
            failure = HTTPFailure(.bodyTooLarge, "the answer is larger than \(transfer.request.maximumResponseSize) bytes")
        } else {
            failure = HTTPFailure(Self.kind(of: code), message)
        }
        transfer.continuation.resume(returning: HTTPExchangeResult(.failure(failure), latency: latency))
    }

    static func kind(of code: CURLcode) -> HTTPFailure.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT: .timeout
        case CURLE_COULDNT_CONNECT: .connectionRefused
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE: .connectionReset
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .dns
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS:
            .tls
        case CURLE_WEIRD_SERVER_REPLY, CURLE_UNSUPPORTED_PROTOCOL, CURLE_HTTP2, CURLE_URL_MALFORMAT, CURLE_BAD_CONTENT_ENCODING:
            .protocolError
        default: .other
        }
    }
}

/// libcurl's body callback: appends, or stops the transfer when the answer grows past its cap.
private func curlWrite(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    if transfer.body.count + length > transfer.request.maximumResponseSize {
        transfer.tooLarge = true
        return 0
    }
    data.withMemoryRebound(to: UInt8.self, capacity: length) { transfer.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
    return length
}

/// libcurl's header callback: keeps the headers of the final answer, names lower-cased.
private func curlHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ context: UnsafeMutableRawPointer?) -> Int {
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    let length = size * count
    let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
        String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
    }
    if line.hasPrefix("HTTP/") {
        transfer.headers.removeAll()  // a new answer (after a 100 Continue)
    } else if let colon = line.firstIndex(of: ":") {
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        if transfer.headers.count < 100 { transfer.headers.append(HTTPHeader(name, value)) }
    }
    return length
}

/// libcurl's SSL context callback: adds the request's `CAFile=` anchors to OpenSSL's store.
private func curlSSLContext(_ easy: UnsafeMutableRawPointer?, _ sslContext: UnsafeMutableRawPointer?, _ context: UnsafeMutableRawPointer?) -> CURLcode {
    guard let sslContext, let context else { return CURLE_OK }
    let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
    guard let anchors = transfer.trustAnchors else { return CURLE_SSL_CACERT_BADFILE }
    anchors.certificates.withUnsafeBufferPointer { buffer in
        _ = reconcile_add_trust_anchors(sslContext, buffer.baseAddress, Int32(buffer.count))
    }
    return CURLE_OK
}
