import CCurl
import Foundation
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// The daemon's ``HTTPTransport``: libcurl's multi interface on one thread of its own, so that
/// many requests are in flight at once over kept-alive connections.
///
/// What it guarantees, whatever the server does: TLS certificates are always verified (against
/// the system's anchors, plus the request's own `CAFile=` anchors, which no other request
/// shares — not even a kept-alive connection); redirects are never followed; only `http` and
/// `https` are spoken; a proxy is used only when the request names one (`[Daemon] Proxy=`),
/// never from the environment (`http_proxy` and friends); a request never takes longer than its
/// time-out; an answer larger than the request's cap is cut off and reported as
/// `bodyTooLarge`; a request whose task is cancelled is dropped at once and reported as
/// `cancelled` (it may have reached the server). Every failure is a value.
public final class CurlTransport: HTTPTransport {
    private let loop: CurlMultiLoop

    /// - Parameter maximumConnections: connections kept open for reuse (at least the number of
    ///   requests in flight).
    public init(maximumConnections: Int = 128) {
        loop = CurlMultiLoop(maximumConnections: maximumConnections)
    }

    /// With `systemAnchors` in place of the system's CA bundle (tests).
    init(maximumConnections: Int = 128, systemAnchors: [UInt8]) {
        loop = CurlMultiLoop(maximumConnections: maximumConnections, systemAnchors: systemAnchors)
    }

    public func send(_ request: HTTPRequest) async -> HTTPExchangeResult {
        let cancellation = CurlCancellation()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.submit(CurlTransfer(request: request, continuation: continuation, cancellation: cancellation))
            }
        } onCancel: { [loop] in
            loop.cancel(cancellation)
        }
    }

    /// Forgets the system's anchors as read, so that the next request with `CAFile=` anchors
    /// reads them again (after a reload: the distribution may have updated them).
    public func reloadTrustAnchors() {
        loop.reloadTrustAnchors()
    }

    /// Whether the loop sleeps with nothing in flight, without a deadline (what a test waits for).
    var isIdle: Bool { loop.isIdle.load(ordering: .acquiring) }
}

/// The CA bundle a request with `CAFile=` anchors is verified with: the system's anchors
/// followed by the section's. libcurl is given a blob (`CURLOPT_CAINFO_BLOB`), which it counts
/// in deciding whether a kept-alive connection may serve a request — so a connection verified
/// with one section's anchors never serves another section, nor the same one after a reload
/// removed them or changed the system's (the blob names the system bundle's generation) — and
/// which keeps such a request off libcurl's certificate-store cache.
/// (Anchors added to the store libcurl had set up, as before, went into that cache where libcurl
/// keeps one — for every endpoint — and the connections they verified served any request, after
/// a reload too.)
///
/// Parsing the system's ≈140 anchors costs ≈45 ms of CPU, and libcurl parsed a blob again for
/// every new connection, on the loop's one thread (a server closing each connection held the
/// daemon to ≈21 requests/s). So the whole bundle is parsed once into an `X509_STORE`
/// (``store``) that each new connection's TLS context takes (`CURLOPT_SSL_CTX_FUNCTION`); the
/// blob libcurl is given is the section's anchors and a comment naming the system bundle's
/// generation (``blob``: small to parse, and still what keeps connections apart). Through an
/// HTTPS proxy the whole bundle stays the blob: libcurl calls back for the proxy's TLS context
/// too, which the section's anchors must not verify.
final class CertificateBundle: @unchecked Sendable {
    // @unchecked: immutable after init; OpenSSL's X509_STORE is reference-counted and locked.
    let bytes: [UInt8]
    /// The section's anchors alone, as libcurl's `CURLOPT_CAINFO_BLOB`.
    let blob: [UInt8]
    /// Every anchor of ``bytes``, parsed; `nil` if none could be (libcurl's own parse decides then).
    let store: OpaquePointer?

    /// - Parameters:
    ///   - anchors: the section's; `nil`: the system's alone (a request without `CAFile=`,
    ///     whose blob is then the system bundle's first certificate: libcurl needs one, and
    ///     would otherwise parse its whole CA file at every new connection too).
    ///   - generation: the system bundle's, counted by reloads.
    init(system: [UInt8], anchors: TrustAnchors?, generation: Int = 0) {
        var bytes = system
        if let last = bytes.last, last != UInt8(ascii: "\n") { bytes.append(UInt8(ascii: "\n")) }
        bytes += anchors?.pem ?? []
        self.bytes = bytes
        // Text outside BEGIN/END blocks is skipped by the PEM reader.
        var blob = Array("# reconciled: system anchors, generation \(generation)\n".utf8)
        blob += anchors?.pem ?? Self.firstCertificate(of: system)
        self.blob = blob
        store = bytes.withUnsafeBytes { reconcile_store_from_pem($0.baseAddress, Int32(clamping: $0.count)) }
    }

    /// The first `-----BEGIN CERTIFICATE-----` … `-----END CERTIFICATE-----` block of a PEM
    /// bundle; empty if it has none.
    static func firstCertificate(of pem: [UInt8]) -> [UInt8] {
        let begin = Array("-----BEGIN CERTIFICATE-----".utf8)
        let end = Array("-----END CERTIFICATE-----".utf8)
        guard let start = pem.firstRange(of: begin)?.lowerBound,
            let stop = pem[start...].firstRange(of: end)?.upperBound
        else { return [] }
        return Array(pem[start..<stop]) + [UInt8(ascii: "\n")]
    }

    deinit {
        if let store { X509_STORE_free(store) }
    }

    /// The system's anchors: the PEM file libcurl was built to use (`CURLINFO_CAINFO`; Debian's
    /// `/etc/ssl/certs/ca-certificates.crt`); empty when there is none.
    static func systemAnchors() -> [UInt8] {
        guard let easy = curl_easy_init() else { return [] }
        defer { curl_easy_cleanup(easy) }
        var path: UnsafeMutablePointer<CChar>?
        guard reconcile_curl_getinfo_pointer(easy, CURLINFO_CAINFO, &path) == CURLE_OK, let path else { return [] }
        return FileManager.default.contents(atPath: String(cString: path)).map(Array.init) ?? []
    }
}

/// Set when the task waiting for a transfer is cancelled; the loop's thread looks at it.
final class CurlCancellation: Sendable {
    let requested = Atomic<Bool>(false)
}

/// One request on its way through libcurl. Touched only on the loop's thread, except for the
/// continuation, which is resumed exactly once.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: after `submit` hands it over, only the loop's thread touches it.
    let request: HTTPRequest
    let continuation: CheckedContinuation<HTTPExchangeResult, Never>
    let cancellation: CurlCancellation
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
    /// The anchors its connections are verified with, alive while libcurl may call back with them.
    var bundle: CertificateBundle?
    var started = ContinuousClock.now

    init(request: HTTPRequest, continuation: CheckedContinuation<HTTPExchangeResult, Never>, cancellation: CurlCancellation) {
        self.request = request
        self.continuation = continuation
        self.cancellation = cancellation
    }

    deinit {
        if let headerList { curl_slist_free_all(headerList) }
        errorBuffer.deallocate()
    }
}

/// libcurl's multi handle and the thread that drives it.
///
/// The thread drives every transfer with `curl_multi_perform` and sleeps in `curl_multi_poll`.
/// libcurl's socket interface (`curl_multi_socket_action` over an epoll set) was built and
/// measured against it: at the daemon's 64 connections it cost more CPU per request (one
/// `curl_multi_socket_action`, its timer work and two or three `epoll_ctl` calls for each
/// request), so it was not kept (issue 18's note has the figures).
final class CurlMultiLoop: @unchecked Sendable {
    // @unchecked: `multi`, `active` and `idleHandles` are used only on `thread`; the submission
    // queue and the bundles are behind mutexes.
    private let multi: UnsafeMutableRawPointer
    private let submissions = Mutex<[CurlTransfer]>([])
    /// The system's anchors as read (`nil`: not yet), and the bundles made with them, by anchors.
    private let bundles = Mutex<(system: [UInt8]?, made: [TrustAnchors?: CertificateBundle])>((nil, [:]))
    private var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles of finished transfers, reset, for the next ones: a handle reused keeps its
    /// buffers and caches instead of allocating them again for every request (a fifth of the
    /// transport's CPU per request).
    private var idleHandles: [UnsafeMutableRawPointer] = []
    /// The system bundle's generation: one more at each reload.
    private let generation = Atomic<Int>(0)
    /// How many cancellations were asked for: the loop looks for cancelled transfers only when
    /// it moved.
    private let cancellations = Atomic<Int>(0)
    private var cancellationsSeen = 0
    /// Whether the loop sleeps with nothing in flight.
    let isIdle = Atomic<Bool>(false)

    private static let globalInit: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()

    init(maximumConnections: Int, systemAnchors: [UInt8]? = nil) {
        _ = Self.globalInit
        multi = curl_multi_init()!
        if let systemAnchors { bundles.withLock { $0.system = systemAnchors } }
        _ = reconcile_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maximumConnections)
        let thread = Thread { [self] in self.run() }
        thread.name = "reconcile-http"
        thread.start()
    }

    func submit(_ transfer: CurlTransfer) {
        submissions.withLock { $0.append(transfer) }
        curl_multi_wakeup(multi)
    }

    /// Drops the transfer `cancellation` belongs to at the loop's next turn (or when it is
    /// submitted, if it is not yet).
    func cancel(_ cancellation: CurlCancellation) {
        cancellation.requested.store(true, ordering: .releasing)
        cancellations.add(1, ordering: .releasing)
        curl_multi_wakeup(multi)
    }

    func reloadTrustAnchors() {
        // The generation moves first, under the same lock that makes bundles: no bundle made
        // after this call can carry the old generation (and match what was verified before).
        bundles.withLock { state in
            generation.add(1, ordering: .relaxed)
            state = (nil, [:])
        }
    }

    /// The bundle for `anchors`, made once (a handful of sections, a few reloads: the memo is
    /// dropped whole when it grows past a few).
    /// `anchors` `nil`: the system's alone.
    private func bundle(_ anchors: TrustAnchors?) -> CertificateBundle {
        bundles.withLock { state in
            if let made = state.made[anchors] { return made }
            let system = state.system ?? CertificateBundle.systemAnchors()
            state.system = system
            if state.made.count >= 16 { state.made.removeAll() }
            let made = CertificateBundle(system: system, anchors: anchors, generation: generation.load(ordering: .relaxed))
            state.made[anchors] = made
            return made
        }
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
            let asked = cancellations.load(ordering: .acquiring)
            if asked != cancellationsSeen {
                cancellationsSeen = asked
                for (easy, transfer) in active where transfer.cancellation.requested.load(ordering: .acquiring) {
                    drop(easy, transfer)
                }
            }
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
            isIdle.store(active.isEmpty, ordering: .releasing)
            curl_multi_poll(multi, nil, 0, wait, nil)
            isIdle.store(false, ordering: .releasing)
        }
    }

    private func start(_ transfer: CurlTransfer) {
        guard !transfer.cancellation.requested.load(ordering: .acquiring) else {
            transfer.continuation.resume(returning: HTTPExchangeResult(.failure(Self.cancelled), latency: .zero))
            return
        }
        guard let easy = idleHandles.popLast() ?? curl_easy_init() else {
            transfer.continuation.resume(returning: HTTPExchangeResult(.failure(HTTPFailure(.other, "curl_easy_init failed")), latency: .zero))
            return
        }
        let request = transfer.request
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_URL, request.url)
        // The path goes as built: libcurl would otherwise squash `/./` and `/../` segments.
        _ = reconcile_curl_setopt_long(easy, CURLOPT_PATH_AS_IS, 1)
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")
        _ = reconcile_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, 1)
        _ = reconcile_curl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, 2)
        // Unless a proxy is configured, none: "" also keeps libcurl from reading http_proxy,
        // HTTPS_PROXY, ALL_PROXY and NO_PROXY from the environment, where it would otherwise find
        // one and send it the merchant's token and the receipt.
        _ = reconcile_curl_setopt_pointer(easy, CURLOPT_PROXY, request.proxy ?? "")
        if request.proxy != nil {
            // The daemon's own host is reached directly.
            _ = reconcile_curl_setopt_pointer(easy, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1")
        }
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
        let viaTLSProxy = request.proxy.map { $0.lowercased().hasPrefix("https:") } ?? false
        // A reused handle keeps libcurl's TLS session cache, and libcurl resumes a session only
        // for a request with the same CA blob (which names the anchors and the system bundle's
        // generation). A request given no blob (the system's anchors through an HTTPS proxy, or
        // where no store could be parsed) neither resumes nor keeps sessions: one verified
        // before a reload must not be resumed after it.
        var blobGiven = false
        if let anchors = request.trustAnchors {
            blobGiven = true
            let bundle = bundle(anchors)
            if let store = bundle.store, !viaTLSProxy, reconcile_curl_use_cert_store(easy, store) == CURLE_OK {
                // The section's anchors for libcurl (cheap, and what tells its connections
                // apart); the whole bundle, parsed once, for the verification.
                _ = bundle.blob.withUnsafeBytes { reconcile_curl_setopt_blob_copy(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }
                transfer.bundle = bundle
            } else {
                _ = bundle.bytes.withUnsafeBytes { reconcile_curl_setopt_blob_copy(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }
            }
        } else if request.url.lowercased().hasPrefix("https:"), !viaTLSProxy {
            // The system's anchors alone, parsed once too: libcurl would read its whole CA file
            // again at every new connection (Debian's libcurl has a CA path, which keeps its
            // cache off): ≈45 ms on this thread each time.
            let bundle = bundle(nil)
            if let store = bundle.store, reconcile_curl_use_cert_store(easy, store) == CURLE_OK {
                _ = bundle.blob.withUnsafeBytes { reconcile_curl_setopt_blob_copy(easy, CURLOPT_CAINFO_BLOB, $0.baseAddress, $0.count) }
                transfer.bundle = bundle
                blobGiven = true
            }
        }
        if !blobGiven { _ = reconcile_curl_setopt_long(easy, CURLOPT_SSL_SESSIONID_CACHE, 0) }
        transfer.started = ContinuousClock.now
        active[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    /// Keeps a finished transfer's handle for the next, with every option back at its default
    /// (`curl_easy_reset`: nothing of this request — URL, headers, body, anchors, proxy — can
    /// reach the next); at most 256 are kept (the connections kept are 128 by default).
    private func recycle(_ easy: UnsafeMutableRawPointer) {
        guard idleHandles.count < 256 else {
            curl_easy_cleanup(easy)
            return
        }
        curl_easy_reset(easy)
        idleHandles.append(easy)
    }

    /// What a cancelled transfer reports.
    static let cancelled = HTTPFailure(.cancelled, "the request was cancelled (the daemon is stopping); it may have reached the server")

    /// Ends a transfer whose task was cancelled, without waiting for libcurl.
    private func drop(_ easy: UnsafeMutableRawPointer, _ transfer: CurlTransfer) {
        curl_multi_remove_handle(multi, easy)
        active.removeValue(forKey: easy)
        recycle(easy)
        transfer.continuation.resume(returning: HTTPExchangeResult(.failure(Self.cancelled), latency: ContinuousClock.now - transfer.started))
    }

    private func finish(_ easy: UnsafeMutableRawPointer, code: CURLcode) {
        curl_multi_remove_handle(multi, easy)
        defer { recycle(easy) }
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
    // Bytes, not Strings: this runs for every header line of every answer (the profile of the
    // end-to-end path had it at 6 % of the daemon's CPU with Foundation's trimming).
    data.withMemoryRebound(to: UInt8.self, capacity: length) { start in
        let line = UnsafeBufferPointer(start: start, count: length)
        if line.starts(with: "HTTP/".utf8) {
            transfer.headers.removeAll()  // a new answer (after a 100 Continue)
        } else if transfer.headers.count < 100, let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            transfer.headers.append(HTTPHeader(HeaderLine.name(line[..<colon]), HeaderLine.value(line[(colon + 1)...])))
        }
    }
    return length
}

/// The parts of a header line, from its bytes: the name lower-cased (ASCII; names are tokens),
/// the value without the optional white space, CR and LF around it.
enum HeaderLine {
    static func name(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        String(unsafeUninitializedCapacity: bytes.count) { buffer in
            for (index, byte) in bytes.enumerated() {
                buffer[index] = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
            }
            return bytes.count
        }
    }

    static func value(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }
}
