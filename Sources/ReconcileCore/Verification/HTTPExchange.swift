/// One HTTP request, as a verifier builds it and a transport sends it.
public struct HTTPRequest: Sendable, Hashable {
    public var method: String
    public var url: String
    /// Header names and values, in order. Values may hold secrets (`Authorization`): a request
    /// is never logged.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// For the whole exchange, connection included.
    public var timeout: Duration
    /// Answers longer than this are cut off and count as a failure.
    public var maximumResponseSize: Int
    /// Trusted besides the system's anchors, for this request only (its section's `CAFile=`).
    public var trustAnchors: TrustAnchors?
    /// The proxy to send it through (`[Daemon] Proxy=`); `nil` sends it directly, whatever the
    /// environment's `http_proxy` and friends say.
    public var proxy: String?

    public init(
        method: String = "POST", url: String, headers: [HTTPHeader] = [], body: [UInt8] = [], timeout: Duration,
        maximumResponseSize: Int = 1 << 20, trustAnchors: TrustAnchors? = nil, proxy: String? = nil
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maximumResponseSize = maximumResponseSize
        self.trustAnchors = trustAnchors
        self.proxy = proxy
    }
}

/// One header line.
public struct HTTPHeader: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// An answer: status, headers (names lower-cased) and body.
public struct HTTPResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [HTTPHeader]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header (case-insensitive name).
    public func header(_ name: String) -> String? {
        headers.first { Self.namesMatch($0.name, name) }?.value
    }

    /// Header names compared without regard to ASCII case (they are tokens), allocating nothing.
    static func namesMatch(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        func lower(_ byte: UInt8) -> UInt8 { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte }
        return zip(a.utf8, b.utf8).allSatisfy { lower($0) == lower($1) }
    }
}

/// Why an exchange produced no answer.
public struct HTTPFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds a verifier tells apart; all of them are transient for the order.
    public enum Kind: String, Sendable, Hashable {
        case timeout
        case connectionRefused = "connection_refused"
        case connectionReset = "connection_reset"
        case dns = "dns"
        case tls = "tls"
        case bodyTooLarge = "body_too_large"
        case protocolError = "protocol_error"
        case other = "transport_error"
        /// The attempt's task was cancelled (the daemon stopped it after `DrainTimeout`).
        case cancelled = "request_cancelled"
    }

    public var kind: Kind
    /// The transport's own words (libcurl's error text); never holds request data.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}

/// The outcome of one exchange, and how long it took.
public struct HTTPExchangeResult: Sendable, Hashable {
    public var outcome: Result<HTTPResponse, HTTPFailure>
    public var latency: Duration

    public init(_ outcome: Result<HTTPResponse, HTTPFailure>, latency: Duration) {
        self.outcome = outcome
        self.latency = latency
    }

    public var response: HTTPResponse? {
        if case .success(let response) = outcome { return response }
        return nil
    }
}

/// Sends HTTP requests. The daemon's transport is libcurl's multi interface; tests may use
/// anything that answers.
public protocol HTTPTransport: Sendable {
    /// Sends one request. Never throws: every failure is a value, classified by the caller.
    func send(_ request: HTTPRequest) async -> HTTPExchangeResult
}
