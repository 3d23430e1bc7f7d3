/// A reason code: the stable word of a ``Reason`` (`duplicate_transaction`, `http_503`). Codes
/// are an outside contract: the `reason` column stores them, `reconcilectl` prints them and the
/// journal's `REASON=` field carries them, so the words never change. Every fixed code the daemon
/// produces is a constant here, and every family built from a number or a name a factory; there
/// is no string-literal conformance, so a bare literal cannot become a code by accident.
/// `docs/operating.md` ("Reason codes") lists them all (a test keeps the two in step).
///
/// A code read back from the store or the wire is kept as it is (``init(rawValue:)``), even one
/// this version does not produce.
public struct ReasonCode: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { rawValue }

    public static func < (left: ReasonCode, right: ReasonCode) -> Bool {
        left.rawValue < right.rawValue
    }

    private init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    // MARK: - Ingest and waiting

    /// A new order was stored from a spool file with usable proof.
    public static let ingested = ReasonCode("ingested")
    /// A spool file brought new proof for an order the store holds.
    public static let proofReplaced = ReasonCode("proof_replaced")
    /// A spool file repeated an order the store holds; nothing changed.
    public static let duplicateIgnored = ReasonCode("duplicate_ignored")
    /// The order carries no proof its verifier can use.
    public static let noUsableProof = ReasonCode("no_usable_proof")
    /// A Google Play order waits: no `[GooglePlay]` (and no `Kind=http`) is configured.
    public static let noGooglePlaySection = ReasonCode("no_google_play_section")
    /// An App Store order waits: no `[Verifier]` is configured (a Google Play-only daemon).
    public static let noVerifierSection = ReasonCode("no_verifier_section")
    /// A waiting order became verifiable after a reload changed the verifiers.
    public static let verifierChanged = ReasonCode("verifier_changed")
    /// A Google Play order naming a package not in `[GooglePlay] PackageName=`.
    public static let foreignPackage = ReasonCode("foreign_package")

    // MARK: - Attempts, leases and limits

    /// An attempt started (charged against `MaxAttempts=`).
    public static let attempt = ReasonCode("attempt")
    /// A circuit probe started (not charged).
    public static let probe = ReasonCode("probe")
    /// The daemon stopped during an attempt; the order is due again.
    public static let leaseReleased = ReasonCode("lease_released")
    /// Another node's lease expired during an attempt; the order is due again.
    public static let leaseExpired = ReasonCode("lease_expired")
    /// An attempt's result arrived after its lease was lost; it was not applied.
    public static let leaseLost = ReasonCode("lease_lost")
    /// New proof arrived during an attempt; it is tried next.
    public static let newProof = ReasonCode("new_proof")
    /// `MaxAttempts=` was reached: the order or action goes to a person.
    public static let maxAttempts = ReasonCode("max_attempts")
    /// `MaxAge=` passed (while the endpoint's circuit was closed, or while waiting for proof).
    public static let maxAge = ReasonCode("max_age")

    // MARK: - Verified, granted, delivered

    /// The store verified the purchase.
    public static let verified = ReasonCode("verified")
    /// The merchant (`Kind=http`) verified and granted the order.
    public static let granted = ReasonCode("granted")
    /// The delivery endpoint acknowledged the grant.
    public static let delivered = ReasonCode("delivered")
    /// Verified, and no delivery URL is configured: the order finishes at once.
    public static let noDeliveryURL = ReasonCode("no_delivery_url")
    /// The purchase already became an order the store reported (DESIGN §5b): this late phone
    /// order ends `finished`, nothing delivered; the detail names that order.
    public static let samePurchaseAs = ReasonCode("same_purchase_as")
    /// The transaction is already claimed by another order.
    public static let duplicateTransaction = ReasonCode("duplicate_transaction")
    /// The receipt or answer holds no unclaimed purchase for the order.
    public static let noMatchingPurchase = ReasonCode("no_matching_purchase")
    /// The store's answer is for another app (`BundleID=`).
    public static let bundleMismatch = ReasonCode("bundle_mismatch")
    /// Google's purchase names another account than the order.
    public static let accountMismatch = ReasonCode("account_mismatch")
    /// Google's purchase is for another product than the order.
    public static let productMismatch = ReasonCode("product_mismatch")
    /// A sandbox or test purchase, and `AllowSandbox=no` / `AllowTestPurchases=no`.
    public static let sandboxNotAllowed = ReasonCode("sandbox_not_allowed")
    /// A signed transaction from the wrong environment.
    public static let wrongEnvironment = ReasonCode("wrong_environment")

    // MARK: - Operator actions

    /// Held by an operator (`reconcilectl hold`).
    public static let hold = ReasonCode(OperatorAction.hold.rawValue)
    /// Released by an operator.
    public static let release = ReasonCode(OperatorAction.release.rawValue)
    /// Cancelled by an operator.
    public static let cancel = ReasonCode(OperatorAction.cancel.rawValue)
    /// Resolved by hand by an operator.
    public static let resolve = ReasonCode(OperatorAction.resolve.rawValue)
    /// Retried by an operator; for an outbox action, sent again.
    public static let retry = ReasonCode(OperatorAction.retry.rawValue)
    /// An operator had an order's failed outbox actions sent again.
    public static let retryActions = ReasonCode("retry_actions")

    /// The code of an operator action (`hold`, `release`, `cancel`, `resolve`, `retry`).
    public static func operatorAction(_ action: OperatorAction) -> ReasonCode {
        ReasonCode(action.rawValue)
    }

    /// An operator action asked for during an attempt, applied when it ends (`hold_requested`).
    public static func requested(_ action: OperatorAction) -> ReasonCode {
        ReasonCode("\(action.rawValue)_requested")
    }

    /// An operator action asked for during an attempt that could not be applied after it
    /// (`retry_not_applied`).
    public static func notApplied(_ action: OperatorAction) -> ReasonCode {
        ReasonCode("\(action.rawValue)_not_applied")
    }

    // MARK: - Store notifications

    /// The store says the purchase was refunded.
    public static let refunded = ReasonCode("refunded")
    /// The store says the purchase was revoked (App Store `REVOKE`).
    public static let revoked = ReasonCode("revoked")
    /// Google Play voided the purchase for a chargeback.
    public static let chargeback = ReasonCode("chargeback")
    /// The store reversed a refund.
    public static let refundReversed = ReasonCode("refund_reversed")

    /// A revocation (`refunded_reversed_before`) whose reversal the store signed later came first.
    public static func revocationReversedBefore(_ revocation: ReasonCode) -> ReasonCode {
        ReasonCode("\(revocation.rawValue)_reversed_before")
    }

    /// A notification (`refunded_superseded`) after which a later one the store signed came first.
    public static func notificationSuperseded(_ notification: ReasonCode) -> ReasonCode {
        ReasonCode("\(notification.rawValue)_superseded")
    }

    /// A notification (`refund_reversed_ignored`) that does not apply to the order's state.
    public static func notificationIgnored(_ notification: ReasonCode) -> ReasonCode {
        ReasonCode("\(notification.rawValue)_ignored")
    }

    // MARK: - Outbox

    /// An outbox action was queued.
    public static let queued = ReasonCode("queued")
    /// An outbox action was replaced by a newer one.
    public static let superseded = ReasonCode("superseded")
    /// The merchant took a revocation notice.
    public static let notified = ReasonCode("notified")
    /// Apple took the consumption information.
    public static let answered = ReasonCode("answered")
    /// A revocation notice skipped: `[Revocation] URL=` is not configured (DESIGN §5a).
    public static let noRevocationURL = ReasonCode("no_revocation_url")
    /// An outbox action of a kind its sender does not send.
    public static let unknownAction = ReasonCode("unknown_action")
    /// A recorded revocation notice is not a JSON object; nothing was sent.
    public static let revocationPayloadInvalid = ReasonCode("revocation_payload_invalid")
    /// The revocation endpoint refused the notice.
    public static let revocationRefused = ReasonCode("revocation_refused")
    /// A consumption answer was queued for Apple.
    public static let consumptionAnswerQueued = ReasonCode("consumption_answer_queued")
    /// A consumption request was recorded but not answered (no consent, never verified, late).
    public static let consumptionNotAnswered = ReasonCode("consumption_not_answered")
    /// Apple's 12-hour deadline for a consumption answer passed before it was sent.
    public static let consumptionDeadlinePassed = ReasonCode("consumption_deadline_passed")
    /// A recorded consumption answer is not what the rule writes; nothing was sent.
    public static let consumptionPayloadInvalid = ReasonCode("consumption_payload_invalid")

    // MARK: - HTTP, any endpoint

    /// The transport timed out.
    public static let timeout = ReasonCode(HTTPFailure.Kind.timeout.rawValue)
    /// The connection was refused.
    public static let connectionRefused = ReasonCode(HTTPFailure.Kind.connectionRefused.rawValue)
    /// The connection was reset.
    public static let connectionReset = ReasonCode(HTTPFailure.Kind.connectionReset.rawValue)
    /// The host name did not resolve.
    public static let dns = ReasonCode(HTTPFailure.Kind.dns.rawValue)
    /// The TLS handshake or certificate check failed.
    public static let tls = ReasonCode(HTTPFailure.Kind.tls.rawValue)
    /// The answer was larger than the daemon reads.
    public static let bodyTooLarge = ReasonCode(HTTPFailure.Kind.bodyTooLarge.rawValue)
    /// The server broke the HTTP protocol.
    public static let protocolError = ReasonCode(HTTPFailure.Kind.protocolError.rawValue)
    /// Any other transport failure.
    public static let transportError = ReasonCode(HTTPFailure.Kind.other.rawValue)
    /// The attempt was cancelled while its request was out (the daemon stopped it after
    /// `DrainTimeout`); never recorded: the order keeps its lease until the next start.
    public static let requestCancelled = ReasonCode(HTTPFailure.Kind.cancelled.rawValue)
    /// A 2xx answer that declares another content type than JSON (a proxy's page).
    public static let wrongContentType = ReasonCode("wrong_content_type")
    /// An answer that does not parse.
    public static let unparseableAnswer = ReasonCode("unparseable_answer")
    /// A poll's answer the poller did not expect (journal).
    public static let unexpectedAnswer = ReasonCode("unexpected_answer")
    /// An answer the verifier did not expect at this point.
    public static let unexpected = ReasonCode("unexpected")

    /// The code of a transport failure (`timeout`, `connection_refused`, …).
    public static func transport(_ kind: HTTPFailure.Kind) -> ReasonCode {
        ReasonCode(kind.rawValue)
    }

    /// An HTTP status from the merchant, delivery or revocation endpoint (`http_503`).
    public static func http(_ status: Int) -> ReasonCode {
        ReasonCode("http_\(status)")
    }

    /// A redirect the daemon does not follow (`http_301_redirect_not_followed`).
    public static func httpRedirectNotFollowed(_ status: Int) -> ReasonCode {
        ReasonCode("http_\(status)_redirect_not_followed")
    }

    /// An endpoint's circuit is open, so no request was sent (`sandbox_circuit_open`).
    public static func endpointCircuitOpen(_ endpoint: VerificationEndpoint) -> ReasonCode {
        ReasonCode("\(endpoint.rawValue)_circuit_open")
    }

    // MARK: - Merchant, delivery and revocation

    /// The merchant answered 202: accepted, not decided yet.
    public static let merchantAcceptedPending = ReasonCode("merchant_accepted_pending")
    /// The merchant answered 409: another verification is in progress.
    public static let merchantConflictInProgress = ReasonCode("merchant_conflict_in_progress")
    /// The merchant answered 425: too early.
    public static let merchantTooEarly = ReasonCode("merchant_too_early")
    /// The merchant's answer does not parse.
    public static let merchantUnparseableAnswer = ReasonCode("merchant_unparseable_answer")
    /// The merchant answered `{"result":"pending"}`.
    public static let merchantPending = ReasonCode("merchant_pending")
    /// The merchant answered a `result` the protocol does not know.
    public static let merchantUnknownResult = ReasonCode("merchant_unknown_result")
    /// The endpoint answered a `result` the protocol does not know (the circuit's word).
    public static let unknownResult = ReasonCode("unknown_result")
    /// The merchant answered `{"result":"rejected"}`.
    public static let merchantRejected = ReasonCode("merchant_rejected")
    /// The merchant refused the request (a 4xx it reads itself).
    public static let merchantRefused = ReasonCode("merchant_refused")
    /// The delivery endpoint refused the grant.
    public static let deliveryRefused = ReasonCode("delivery_refused")

    /// A merchant status that is neither an answer nor an endpoint failure (`merchant_http_418`).
    public static func merchantHTTP(_ status: Int) -> ReasonCode {
        ReasonCode("merchant_http_\(status)")
    }

    /// A 4xx from the delivery (`delivery_http_422`) or revocation (`revocation_http_422`)
    /// endpoint.
    public static func endpointHTTP(_ endpoint: VerificationEndpoint, _ status: Int) -> ReasonCode {
        ReasonCode("\(endpoint.rawValue)_http_\(status)")
    }

    // MARK: - Apple verifyReceipt (Kind=apple)

    /// Apple answered status 0 without a receipt.
    public static let appleZeroWithoutReceipt = ReasonCode("apple_0_without_receipt")
    /// Apple's 21003: the receipt could not be authenticated.
    public static let receiptNotAuthenticated = ReasonCode("receipt_not_authenticated")
    /// Apple's 21002 answered too many times: the receipt is malformed.
    public static let malformedReceipt = ReasonCode("malformed_receipt")

    /// An Apple `verifyReceipt` status (`apple_21005`).
    public static func apple(_ status: Int) -> ReasonCode {
        ReasonCode("apple_\(status)")
    }

    /// An Apple status in 21100…21199 that Apple calls not retryable (`apple_21100_not_retryable`).
    public static func appleNotRetryable(_ status: Int) -> ReasonCode {
        ReasonCode("apple_\(status)_not_retryable")
    }

    /// The wrong environment again after a bounce (`apple_21007_after_bounce`).
    public static func appleAfterBounce(_ status: Int) -> ReasonCode {
        ReasonCode("apple_\(status)_after_bounce")
    }

    /// A bounce to the sandbox, with no sandbox URL configured (`apple_21007_no_sandbox_url`).
    public static func appleNoSandboxURL(_ status: Int) -> ReasonCode {
        ReasonCode("apple_\(status)_no_sandbox_url")
    }

    /// An Apple status the protocol does not know (`apple_status_21199`).
    public static func appleStatus(_ status: Int) -> ReasonCode {
        ReasonCode("apple_status_\(status)")
    }

    // MARK: - App Store Server API (Kind=appstore)

    /// Apple's 4000006: the transaction id is invalid.
    public static let invalidTransactionID = ReasonCode("invalid_transaction_id")
    /// Apple's 4000008: the original transaction id is invalid.
    public static let invalidOriginalTransactionID = ReasonCode("invalid_original_transaction_id")
    /// Apple's 4000187: the transaction id is not an original transaction id.
    public static let transactionIDNotOriginal = ReasonCode("transaction_id_not_original")
    /// Apple's 4040001 (or `verifyReceipt`'s 21010): no such account.
    public static let accountNotFound = ReasonCode("account_not_found")
    /// Apple's 4040005: the original transaction is not found.
    public static let originalTransactionNotFound = ReasonCode("original_transaction_not_found")
    /// Apple does not know the transaction (in any environment the daemon may ask).
    public static let transactionNotFound = ReasonCode("transaction_not_found")
    /// The signed transaction does not verify.
    public static let invalidSignedTransaction = ReasonCode("invalid_signed_transaction")
    /// The receipt is neither an app receipt nor a transaction receipt.
    public static let unreadableReceipt = ReasonCode("unreadable_receipt")
    /// The transaction history is longer than the daemon reads.
    public static let historyTooLong = ReasonCode("history_too_long")
    /// The App Store key cannot sign the token.
    public static let appStoreKey = ReasonCode("appstore_key")
    /// Apple answered for another app than `AppAppleID=`.
    public static let appStoreWrongApp = ReasonCode("appstore_wrong_app")
    /// Apple's signed answer does not verify.
    public static let appStoreUnverifiableAnswer = ReasonCode("appstore_unverifiable_answer")
    /// Apple answered about another transaction than the one asked for.
    public static let appStoreAnsweredAnotherTransaction = ReasonCode("appstore_answered_another_transaction")
    /// Apple's 5000000 answered too many times.
    public static let appleInternalError = ReasonCode("apple_internal_error")

    /// An App Store Server API error code or HTTP status (`appstore_4000006`, `appstore_401`).
    public static func appStore(_ code: Int) -> ReasonCode {
        ReasonCode("appstore_\(code)")
    }

    /// Another HTTP status from the App Store Server API, with Apple's error code if it sent one
    /// (`appstore_http_503`, `appstore_http_418_4000000`).
    public static func appStoreHTTP(_ status: Int, errorCode: Int? = nil) -> ReasonCode {
        ReasonCode("appstore_http_\(status)\(errorCode.map { "_\($0)" } ?? "")")
    }

    // MARK: - Google Play

    /// Google's purchase is cancelled (purchaseState 1).
    public static let cancelled = ReasonCode("cancelled")
    /// Google's purchase waits for payment (purchaseState 2).
    public static let paymentPending = ReasonCode("payment_pending")
    /// Google answered a purchaseState the protocol does not know.
    public static let playUnknownPurchaseState = ReasonCode("play_unknown_purchase_state")
    /// Google says the purchase token is no longer valid (410).
    public static let tokenExpired = ReasonCode("token_expired")
    /// Google does not know the purchase token.
    public static let invalidToken = ReasonCode("invalid_token")
    /// Google refused a request for a reason the protocol does not retry.
    public static let playRefused = ReasonCode("play_refused")
    /// The service account key cannot sign the grant.
    public static let playKey = ReasonCode("play_key")
    /// Google answered something the verifier did not expect.
    public static let playUnexpectedAnswer = ReasonCode("play_unexpected_answer")
    /// An acknowledge or consume action whose order no longer holds its purchase token.
    public static let purchaseTokenGone = ReasonCode("purchase_token_gone")
    /// Google says the purchase is consumed already.
    public static let alreadyConsumed = ReasonCode("already_consumed")
    /// Google says the purchase is acknowledged already.
    public static let alreadyAcknowledged = ReasonCode("already_acknowledged")
    /// Google says the purchase was cancelled after it was verified.
    public static let purchaseCancelled = ReasonCode("purchase_cancelled")
    /// Google acknowledged the purchase (`[GooglePlay] Acknowledge=`).
    public static let acknowledged = ReasonCode("acknowledged")
    /// Google consumed the purchase (`[GooglePlay] Consume=`).
    public static let consumed = ReasonCode("consumed")
    /// Google's token endpoint answered something the daemon did not expect.
    public static let tokenUnexpectedAnswer = ReasonCode("token_unexpected_answer")
    /// Google's token endpoint answered 200 with a body that does not parse.
    public static let tokenUnparseableAnswer = ReasonCode("token_unparseable_answer")
    /// Google's token endpoint answered without an access token.
    public static let tokenAnswerWithoutAccessToken = ReasonCode("token_answer_without_access_token")
    /// Google's token endpoint answered an access token the daemon cannot send.
    public static let tokenAnswerUnusableAccessToken = ReasonCode("token_answer_unusable_access_token")
    /// Google's token endpoint answered an unusable `expires_in`.
    public static let tokenAnswerBadExpiresIn = ReasonCode("token_answer_bad_expires_in")

    /// A Google Play Developer API status, with Google's error reason if it sent one
    /// (`play_410_purchaseTokenNoLongerValid`, `play_404`).
    public static func play(_ status: Int, googleReason: String? = nil) -> ReasonCode {
        ReasonCode("play_\(status)\(suffix(googleReason))")
    }

    /// Another Google Play Developer API status (`play_http_503`, `play_http_418_backendError`).
    public static func playHTTP(_ status: Int, googleReason: String? = nil) -> ReasonCode {
        ReasonCode("play_http_\(status)\(suffix(googleReason))")
    }

    /// A redirect from the Google Play Developer API (`play_http_302_redirect_not_followed`).
    public static func playHTTPRedirectNotFollowed(_ status: Int) -> ReasonCode {
        ReasonCode("play_http_\(status)_redirect_not_followed")
    }

    /// A status from Google's token endpoint, with its `error` if it sent one
    /// (`token_http_400_invalid_grant`, `token_http_503`).
    public static func tokenHTTP(_ status: Int, error: String? = nil) -> ReasonCode {
        ReasonCode("token_http_\(status)\(suffix(error))")
    }

    /// A redirect from Google's token endpoint (`token_http_302_redirect_not_followed`).
    public static func tokenHTTPRedirectNotFollowed(_ status: Int) -> ReasonCode {
        ReasonCode("token_http_\(status)_redirect_not_followed")
    }

    /// `_word` for a word a server sent, kept to letters, digits and `_`; nothing for none.
    private static func suffix(_ word: String?) -> String {
        word.map { "_\($0.filter { $0.isLetter || $0.isNumber || $0 == "_" })" } ?? ""
    }

    // MARK: - Scheduler, cluster and daemon (history and the journal's REASON=)

    /// Leased work handed back unsent: the daemon is stopping.
    public static let stopping = ReasonCode("stopping")
    /// Leased work handed back unsent: it is due now as its endpoint's circuit probe.
    public static let probeCandidate = ReasonCode("probe_candidate")
    /// Leased work handed back unsent: its endpoint's rate limit is exhausted.
    public static let rateLimited = ReasonCode("rate_limited")
    /// Work handed back or a poll stopped: the endpoint's circuit is open.
    public static let circuitOpen = ReasonCode("circuit_open")
    /// An order's attempt failed in a way that says something about its endpoint (journal).
    public static let orderFailure = ReasonCode("order_failure")
    /// The wall clock stepped; what is due is evaluated again (journal).
    public static let clockStep = ReasonCode("clock_step")
    /// This node joined the cluster (journal).
    public static let clusterJoin = ReasonCode("cluster_join")
    /// This node's share of the cluster's work changed (journal).
    public static let clusterShare = ReasonCode("cluster_share")
    /// The store answers again after trouble (journal).
    public static let storeRecovered = ReasonCode("store_recovered")
    /// The shared store's notifications are unavailable; nodes' orders are seen at the heartbeat
    /// (journal).
    public static let unavailable = ReasonCode("unavailable")
    /// The escalation command's queue is full; the notice was dropped (journal).
    public static let escalationQueueFull = ReasonCode("escalation_queue_full")
    /// The escalation command failed (journal).
    public static let escalationCommandFailed = ReasonCode("escalation_command_failed")
    /// The escalation command is still running and was left in the background (journal).
    public static let escalationCommandBackground = ReasonCode("escalation_command_background")
    /// A notification or voided-purchase poll read more pages than it may (journal).
    public static let tooManyPages = ReasonCode("too_many_pages")
    /// Apple's notification history answer does not parse as notifications (journal).
    public static let invalidNotifications = ReasonCode("invalid_notifications")
    /// Google named the same next page twice in a voided-purchase poll (journal).
    public static let repeatedPageToken = ReasonCode("repeated_page_token")
    /// Voided purchases may have been missed between two polls (journal).
    public static let voidedGap = ReasonCode("voided_gap")
    /// One of the daemon's services failed; the daemon stops to be restarted (journal).
    public static let serviceFailed = ReasonCode("service_failed")
    /// A control-socket client without permission was refused (journal).
    public static let permissionDenied = ReasonCode("permission_denied")
    /// The configuration has a problem (journal).
    public static let configuration = ReasonCode("configuration")

    /// The store failed (`disk_full`, `read_only`, `store_error`, …; journal).
    public static func storeFailure(_ failure: StoreFailure) -> ReasonCode {
        ReasonCode(failure.rawValue)
    }

    /// An outbox action still fails when its store's deadline nears (`play_acknowledge_overdue`).
    public static func overdue(_ kind: OutboxKind) -> ReasonCode {
        ReasonCode("\(kind.rawValue)_overdue")
    }

    /// Every fixed code above (not the families the factories build), for the documentation test.
    public static let all: [ReasonCode] = [
        ingested, proofReplaced, duplicateIgnored, noUsableProof, noGooglePlaySection, noVerifierSection, verifierChanged,
        foreignPackage,
        attempt, probe, leaseReleased, leaseExpired, leaseLost, newProof, maxAttempts, maxAge,
        verified, granted, delivered, noDeliveryURL, samePurchaseAs, duplicateTransaction, noMatchingPurchase, bundleMismatch, accountMismatch,
        productMismatch, sandboxNotAllowed, wrongEnvironment,
        hold, release, cancel, resolve, retry, retryActions,
        refunded, revoked, chargeback, refundReversed,
        queued, superseded, notified, answered, noRevocationURL, unknownAction, revocationPayloadInvalid, revocationRefused,
        consumptionAnswerQueued, consumptionNotAnswered, consumptionDeadlinePassed, consumptionPayloadInvalid,
        timeout, connectionRefused, connectionReset, dns, tls, bodyTooLarge, protocolError, transportError, requestCancelled, wrongContentType,
        unparseableAnswer, unexpected, unexpectedAnswer,
        merchantAcceptedPending, merchantConflictInProgress, merchantTooEarly, merchantUnparseableAnswer, merchantPending,
        merchantUnknownResult, unknownResult, merchantRejected, merchantRefused, deliveryRefused,
        appleZeroWithoutReceipt, receiptNotAuthenticated, malformedReceipt,
        invalidTransactionID, invalidOriginalTransactionID, transactionIDNotOriginal, accountNotFound, originalTransactionNotFound,
        transactionNotFound, invalidSignedTransaction, unreadableReceipt, historyTooLong, appStoreKey, appStoreWrongApp,
        appStoreUnverifiableAnswer, appStoreAnsweredAnotherTransaction, appleInternalError,
        cancelled, paymentPending, playUnknownPurchaseState, tokenExpired, invalidToken, playRefused, playKey, playUnexpectedAnswer,
        purchaseTokenGone, alreadyConsumed, alreadyAcknowledged, purchaseCancelled, acknowledged, consumed, tokenUnexpectedAnswer,
        tokenUnparseableAnswer,
        tokenAnswerWithoutAccessToken, tokenAnswerUnusableAccessToken, tokenAnswerBadExpiresIn,
        stopping, probeCandidate, rateLimited, circuitOpen, orderFailure, clockStep, clusterJoin, clusterShare, storeRecovered,
        unavailable, escalationQueueFull, escalationCommandFailed, escalationCommandBackground, tooManyPages, invalidNotifications,
        repeatedPageToken, voidedGap, serviceFailed, permissionDenied, configuration,
    ]
}
