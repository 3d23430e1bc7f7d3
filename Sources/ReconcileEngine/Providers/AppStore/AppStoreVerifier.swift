import Foundation
import ReconcileCore
import ReconcileCrypto

/// `Kind=appstore`: the App Store Server API (DESIGN §5; `docs/protocols/apple.md` §2).
///
/// By the proof the order carries: a `signed_transaction` is verified here (chain to the
/// configured roots, Apple's marker extensions, ES256, bundle and environment) and then confirmed
/// with Get Transaction Info, so that a refund since signing is seen; a `transaction_id` is looked
/// up with Get Transaction Info; a `receipt` alone gives a transaction id (as Apple's
/// `ReceiptUtility` extracts it) whose Get Transaction History v2 pages are matched as
/// `Kind=apple` matches a receipt. Every signed transaction Apple returns is verified the same
/// way before anything is taken from it. Production first; 4040010 from production goes once to
/// the sandbox when `AllowSandbox=yes`.
public struct AppStoreVerifier: OrderVerifier {
    public var production: EndpointSettings
    public var sandbox: EndpointSettings
    public var bundleID: String
    public var appAppleID: String?
    public var allowSandbox: Bool
    /// Signs the bearer tokens (reused until shortly before they expire). Never logged.
    public var tokens: AppStoreTokenCache
    /// Verifies signed transactions of each environment.
    public var productionTransactions: SignedDataVerifier
    public var sandboxTransactions: SignedDataVerifier
    public var transport: any HTTPTransport
    public var maximumResponseSize = 1 << 20
    /// A history longer than this many pages (20 transactions each) is not read to the end.
    public var maximumHistoryPages = 25

    public init(
        production: EndpointSettings, sandbox: EndpointSettings, bundleID: String, appAppleID: String?, allowSandbox: Bool,
        tokens: AppStoreTokenCache, productionTransactions: SignedDataVerifier, sandboxTransactions: SignedDataVerifier,
        transport: any HTTPTransport
    ) {
        self.production = production
        self.sandbox = sandbox
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.allowSandbox = allowSandbox
        self.tokens = tokens
        self.productionTransactions = productionTransactions
        self.sandboxTransactions = sandboxTransactions
        self.transport = transport
    }

    public var firstEndpoint: VerificationEndpoint { .production }

    /// The requests of one attempt so far, and whether the first (charged by the scheduler) was
    /// spent yet: every later request takes a token of its own.
    struct Exchanges {
        var records: [AttemptRecord] = []
        var sent = 0
    }

    /// One exchange's meaning.
    enum Step {
        case answer([UInt8])
        case notFound
        case verdict(VerifierOutcome.Verdict)
    }

    public func verify(_ order: ClaimedOrder, gate: any EndpointGate) async -> VerifierOutcome {
        var exchanges = Exchanges()
        let verdict: VerifierOutcome.Verdict
        if let signed = order.proof.signedTransaction {
            verdict = await verifySigned(signed, exchanges: &exchanges, gate: gate)
        } else if let transactionID = order.proof.transactionID {
            verdict = await lookUp(transactionID, exchanges: &exchanges, gate: gate)
        } else if let receipt = order.proof.receipt {
            verdict = await lookUpHistory(receipt: receipt, exchanges: &exchanges, gate: gate)
        } else {
            verdict = .escalate(Reason(.noUsableProof, detail: "the order carries no receipt, transaction id or signed transaction"))
        }
        return VerifierOutcome(records: exchanges.records, verdict: verdict)
    }

    // MARK: - The three proofs

    /// A StoreKit 2 signed transaction from the app: checked here, then confirmed with Apple.
    func verifySigned(_ jws: String, exchanges: inout Exchanges, gate: any EndpointGate) async -> VerifierOutcome.Verdict {
        var environment = VerificationEndpoint.production
        var payload: VerifiedPayload
        do {
            payload = try productionTransactions.verify(jws, now: gate.now())
        } catch .wrongEnvironment(let found) where found == AppStoreEnvironment.sandbox.rawValue {
            guard allowSandbox else {
                return .reject(Reason(.sandboxNotAllowed, detail: "a sandbox transaction, and AllowSandbox=no"))
            }
            do {
                payload = try sandboxTransactions.verify(jws, now: gate.now())
                environment = .sandbox
            } catch {
                return Self.refusedProof(error)
            }
        } catch {
            return Self.refusedProof(error)
        }
        let transaction: AppStoreTransaction
        do {
            transaction = try AppStoreTransaction.parse(payload.json)
        } catch {
            return .reject(Reason(.invalidSignedTransaction, detail: error.description))
        }
        // Confirmed where it was signed: a refund since then shows in Apple's fresh copy.
        let step = await get("/inApps/v1/transactions/\(Self.pathComponent(transaction.transactionID))", on: environment, exchanges: &exchanges, gate: gate)
        switch step {
        case .verdict(let verdict):
            return verdict
        case .notFound:
            return .escalate(Reason(.transactionNotFound, detail: "Apple does not know the signed transaction \(transaction.transactionID)"))
        case .answer(let body):
            return confirmed(body, transactionID: transaction.transactionID, environment: environment, now: gate.now())
        }
    }

    /// A transaction id: Get Transaction Info, production first.
    func lookUp(_ transactionID: String, exchanges: inout Exchanges, gate: any EndpointGate) async -> VerifierOutcome.Verdict {
        let path = "/inApps/v1/transactions/\(Self.pathComponent(transactionID))"
        var environment = VerificationEndpoint.production
        var step = await get(path, on: .production, exchanges: &exchanges, gate: gate)
        if case .notFound = step {
            guard allowSandbox else {
                return .escalate(Reason(.transactionNotFound, detail: "production does not know transaction \(transactionID), and AllowSandbox=no"))
            }
            environment = .sandbox
            step = await get(path, on: .sandbox, exchanges: &exchanges, gate: gate)
        }
        switch step {
        case .verdict(let verdict):
            return verdict
        case .notFound:
            return .escalate(Reason(.transactionNotFound, detail: "neither production nor the sandbox knows transaction \(transactionID)"))
        case .answer(let body):
            return confirmed(body, transactionID: transactionID, environment: environment, now: gate.now())
        }
    }

    /// A receipt only (an app not yet on StoreKit 2): its transaction id, then that customer's
    /// history, matched as a receipt is.
    func lookUpHistory(receipt: String, exchanges: inout Exchanges, gate: any EndpointGate) async -> VerifierOutcome.Verdict {
        let compact = receipt.filter { !$0.isWhitespace }
        let extracted: String?
        do {
            extracted = try ReceiptTransactionID.extract(fromAppReceipt: compact)
        } catch {
            // Not an app receipt: perhaps an iOS 6-style transaction receipt.
            do {
                extracted = try ReceiptTransactionID.extract(fromTransactionReceipt: compact)
            } catch let legacyError {
                return .reject(Reason(.unreadableReceipt, detail: "neither an app receipt (\(error)) nor a transaction receipt (\(legacyError))"))
            }
        }
        guard let transactionID = extracted else {
            return .escalate(Reason(.noMatchingPurchase, detail: "the receipt holds no in-app purchase"))
        }
        var environment = VerificationEndpoint.production
        var transactions: [AppStoreTransaction] = []
        var revision: String?
        var page = 0
        while true {
            page += 1
            var path = "/inApps/v2/history/\(Self.pathComponent(transactionID))"
            if let revision { path += "?revision=\(Self.pathComponent(revision))" }
            var step = await get(path, on: environment, exchanges: &exchanges, gate: gate)
            if case .notFound = step, environment == .production, page == 1 {
                guard allowSandbox else {
                    return .escalate(Reason(.transactionNotFound, detail: "production does not know the receipt's transaction, and AllowSandbox=no"))
                }
                environment = .sandbox
                step = await get(path, on: .sandbox, exchanges: &exchanges, gate: gate)
            }
            let body: [UInt8]
            switch step {
            case .verdict(let verdict): return verdict
            case .notFound: return .escalate(Reason(.transactionNotFound, detail: "Apple does not know the receipt's transaction"))
            case .answer(let answer): body = answer
            }
            let history: AppStoreDocument.HistoryPage
            do {
                history = try AppStoreDocument.historyPage(body)
            } catch {
                return .transient(Reason(.unparseableAnswer, detail: error.description))
            }
            if environment == .production, let expected = appAppleID, let found = history.appAppleID, found != expected {
                return .configuration(Reason(.appStoreWrongApp, detail: "Apple answered for app \(found), AppAppleID=\(expected)"))
            }
            for signed in history.signedTransactions {
                switch verifyReturned(signed, environment: environment, now: gate.now()) {
                case .success(let transaction): transactions.append(transaction)
                case .failure(let failure): return failure.verdict
                }
            }
            guard history.hasMore, let next = history.revision else { break }
            guard page < maximumHistoryPages else {
                return .escalate(Reason(.historyTooLong, detail: "more than \(maximumHistoryPages) pages of history"))
            }
            revision = next
        }
        return match(transactions, environment: environment)
    }

    // MARK: - Answers

    /// Get Transaction Info's answer, verified, for the transaction asked about.
    func confirmed(_ body: [UInt8], transactionID: String, environment: VerificationEndpoint, now: Date) -> VerifierOutcome.Verdict {
        let jws: String
        do {
            jws = try AppStoreDocument.signedTransactionInfo(body)
        } catch {
            return .transient(Reason(.unparseableAnswer, detail: error.description))
        }
        switch verifyReturned(jws, environment: environment, now: now) {
        case .failure(let failure):
            return failure.verdict
        case .success(let transaction):
            guard transaction.transactionID == transactionID || transaction.originalTransactionID == transactionID else {
                return .transient(Reason(.appStoreAnsweredAnotherTransaction))
            }
            return match([transaction], environment: environment)
        }
    }

    /// A signed transaction Apple returned: one that fails its checks is never believed.
    func verifyReturned(_ jws: String, environment: VerificationEndpoint, now: Date) -> Result<AppStoreTransaction, VerdictFailure> {
        let verifier = environment == .sandbox ? sandboxTransactions : productionTransactions
        do {
            let payload = try verifier.verify(jws, now: now)
            return .success(try AppStoreTransaction.parse(payload.json))
        } catch let error as SignedDataError {
            switch error {
            case .wrongBundle:
                return .failure(VerdictFailure(verdict: .escalate(Reason(.bundleMismatch, detail: "Apple's answer: \(error.description); BundleID=\(bundleID)"))))
            default:
                // A forged or broken answer, or roots that do not fit: believe nothing, and stop
                // asking until someone looks (the circuit opens on configuration errors).
                return .failure(VerdictFailure(verdict: .configuration(Reason(.appStoreUnverifiableAnswer, detail: error.description))))
            }
        } catch {
            return .failure(VerdictFailure(verdict: .transient(Reason(.unparseableAnswer, detail: "\(error)"))))
        }
    }

    /// A verdict carried through `Result`.
    struct VerdictFailure: Error {
        var verdict: VerifierOutcome.Verdict
    }

    /// The store matches (product, account token, unclaimed, not revoked, closest purchase) in
    /// the transaction that claims the transaction id.
    func match(_ transactions: [AppStoreTransaction], environment: VerificationEndpoint) -> VerifierOutcome.Verdict {
        if environment == .sandbox && !allowSandbox {
            return .reject(Reason(.sandboxNotAllowed, detail: "a sandbox transaction, and AllowSandbox=no"))
        }
        return .match(items: transactions.map(\.item), environment: environment == .sandbox ? "Sandbox" : "Production")
    }

    /// The order's own signed transaction failed its checks.
    static func refusedProof(_ error: SignedDataError) -> VerifierOutcome.Verdict {
        switch error {
        case .wrongBundle:
            .escalate(Reason(.bundleMismatch, detail: "the signed transaction: \(error.description)"))
        case .wrongEnvironment:
            .reject(Reason(.wrongEnvironment, detail: "the signed transaction: \(error.description)"))
        default:
            .reject(Reason(.invalidSignedTransaction, detail: error.description))
        }
    }

    // MARK: - Exchanges

    /// One GET to the API, with a fresh (or reused) bearer token; the endpoint's health reported.
    func get(_ path: String, on endpoint: VerificationEndpoint, exchanges: inout Exchanges, gate: any EndpointGate) async -> Step {
        // The scheduler took the first request's token (for production); every other takes its own.
        if exchanges.sent > 0 || endpoint != .production {
            guard await gate.acquire(endpoint) else { return .verdict(.notSent(Reason(.endpointCircuitOpen(endpoint)))) }
        }
        exchanges.sent += 1
        let settings = endpoint == .sandbox ? sandbox : production
        let token: String
        do {
            token = try tokens.token(now: gate.now())
        } catch {
            await gate.report(endpoint, .configuration(reason: Reason(.appStoreKey)), retryAfter: nil, rateLimited: false)
            return .verdict(.configuration(Reason(.appStoreKey, detail: "cannot sign the token (\(error))")))
        }
        var endpointSettings = settings
        endpointSettings.bearerToken = token
        let request = endpointSettings.request(
            method: "GET", url: Self.join(settings.url, path), headers: endpointSettings.headers([]), maximumResponseSize: maximumResponseSize)
        let exchange = EndpointExchange(transport: transport, gate: gate)
        let (record, meaning) = await exchange.send(request, to: endpoint, environment: endpoint == .sandbox ? "Sandbox" : "Production") {
            result, now in
            // Every status is the API's to classify; only transport failures are HTTP's.
            .of(HTTPAnswerClassifier.classify(result, handled: Set(100...599), now: now)) { Self.judge($0, now: now) }
        }
        exchanges.records.append(record)
        switch meaning {
        case .verdict(let verdict): return .verdict(verdict)
        case .answer(.notFound): return .notFound
        case .answer(.body(let body)): return .answer(body)
        }
    }

    /// What the API answered, before the protocol reads it.
    enum Answer {
        case body([UInt8])
        /// 4040010: the transaction is not in this environment.
        case notFound
    }

    /// An App Store Server API answer: its status and error code (`docs/protocols/apple.md` §2.3).
    static func judge(_ response: HTTPResponse, now: Date) -> EndpointExchange.Judgement<Answer> {
        let retryAfter = response.header("retry-after").flatMap { RetryAfter.parse($0, now: now) }
        let code = AppStoreAnswerClassifier.errorCode(in: response.body)
        switch AppStoreAnswerClassifier.classify(status: response.status, body: response.body, retryAfter: retryAfter) {
        case .answer:
            guard HTTPAnswerClassifier.declaresJSON(response) else {
                return .init(
                    .verdict(.transient(Reason(.wrongContentType))), observation: .failure(reason: Reason(.wrongContentType)),
                    detail: ReasonCode.wrongContentType.rawValue, verifierStatus: code)
            }
            return .init(.answer(.body(response.body)), verifierStatus: code)
        case .transactionNotFound:
            return .init(.answer(.notFound), detail: ReasonCode.appStore(4040010).rawValue, verifierStatus: code)
        case .transient(let reason, let endpointLevel, let after, let rateLimited):
            return .init(
                .verdict(.transient(reason, retryAfter: after)), observation: endpointLevel ? .failure(reason: reason) : .healthy,
                retryAfter: after, rateLimited: rateLimited, detail: reason.description, verifierStatus: code)
        case .internalError:
            return .init(
                .verdict(.internalError), observation: .failure(reason: Reason(.appStore(5000000))), detail: ReasonCode.appStore(5000000).rawValue, verifierStatus: code)
        case .reject(let reason):
            return .init(
                .verdict(.reject(reason.adding("the App Store Server API answered \(response.status)"))), detail: reason.description,
                verifierStatus: code)
        case .configuration(let reason):
            return .init(
                .verdict(.configuration(reason)), observation: .configuration(reason: reason), detail: reason.description,
                verifierStatus: code)
        }
    }

    /// `base` (a host, perhaps with a path prefix) and an API path.
    static func join(_ base: String, _ path: String) -> String {
        (base.hasSuffix("/") ? String(base.dropLast()) : base) + path
    }

    /// An id as one path segment (or a query value): every byte of its UTF-8 but RFC 3986's
    /// unreserved ASCII (`A-Z a-z 0-9 - . _ ~`) escaped as `%XX`. (Foundation's
    /// `addingPercentEncoding` with `.alphanumerics` kept non-ASCII letters as they were, and
    /// building that character set for every request cost more than the rest of the path.)
    /// A segment of dots only (`.`, `..`) has its dots escaped too: sent as they are, a dot
    /// segment is removed by URL normalisation (`…/tokens/.` became `…/tokens/`), and an order's
    /// proof must never change which resource is asked for.
    static func pathComponent(_ text: String) -> String {
        if !text.isEmpty && text.utf8.allSatisfy({ $0 == UInt8(ascii: ".") }) {
            return String(repeating: "%2E", count: text.utf8.count)
        }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
