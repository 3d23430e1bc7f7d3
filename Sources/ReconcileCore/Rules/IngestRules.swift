import Foundation

/// What a valid spool file does to the store (DESIGN §3): a new order; nothing for the same
/// content; quarantine for another product or for a package not configured (`foreign_package`);
/// a logged duplicate for a finished or cancelled
/// order or a file without new proof; otherwise the proof replaced, which revives an order that
/// stopped for want of it.
public enum IngestRules {
    /// The decision and, when something is written, the plan.
    public static func plan(
        _ candidate: IngestCandidate, existing record: OrderRecord?, verifierKind: VerifierKind, now: Date
    ) -> (plan: OrderPlan?, outcome: IngestOutcome) {
        plan(candidate, existing: record, verifiers: ConfiguredVerifiers(kind: verifierKind), now: now)
    }

    /// The decision and, when something is written, the plan; `verifiers` decide whether the
    /// order's proof is usable now (`pending`) or it waits (`waiting`, with the section it needs).
    public static func plan(
        _ candidate: IngestCandidate, existing record: OrderRecord?, verifiers: ConfiguredVerifiers, now: Date
    ) -> (plan: OrderPlan?, outcome: IngestOutcome) {
        let submission = candidate.submission
        // Another app's purchase: never stored, whatever is stored for the order already.
        if let problem = verifiers.foreignPackageProblem(submission.proof.packageName) {
            return (nil, .conflict(OrderFileProblem(.foreignPackage, "order \(submission.orderID): \(problem)")))
        }
        guard let record else { return insert(candidate, verifiers: verifiers, now: now) }
        if record.contentHash == candidate.contentHash {
            return (nil, .unchanged)
        }
        if record.productID != submission.productID {
            return (nil, .conflict(OrderFileProblem(
                .conflictingProduct,
                "order \(submission.orderID) is stored with product_id \(OrderFileParser.quoted(record.productID)), this file says \(OrderFileParser.quoted(submission.productID))"
            )))
        }
        if record.state.isTerminal {
            return duplicate(record, why: "the order is \(record.state); a later file changes nothing", candidate, now: now)
        }
        // New proof fields overwrite; fields the new file leaves out keep their stored value, so
        // a later file can never take proof away.
        let merged = OrderProof(
            receipt: submission.proof.receipt ?? record.proof.receipt,
            transactionID: submission.proof.transactionID ?? record.proof.transactionID,
            signedTransaction: submission.proof.signedTransaction ?? record.proof.signedTransaction,
            purchaseToken: submission.proof.purchaseToken ?? record.proof.purchaseToken,
            packageName: submission.proof.packageName ?? record.proof.packageName)
        guard !submission.proof.isEmpty, merged != record.proof else {
            return duplicate(record, why: "no new proof", candidate, now: now)
        }

        // "Proof arrives" when the verifier can use the proof; otherwise it is kept and the
        // state stays.
        var after = record
        if merged.isUsable(by: verifiers) {
            switch record.state {
            case .verified:
                break  // granted already: the proof is kept, delivery goes on
            case .held:
                if let resume = record.resumeState, case .moveTo(let next)? = try? OrderLifecycle.next(from: resume, on: .proofArrived) {
                    after.resumeState = next
                }
            default:
                if case .moveTo(let next)? = try? OrderLifecycle.next(from: record.state, on: .proofArrived) {
                    after.state = next
                    if next == .pending { after.nextAttemptAt = now }
                    if record.state.isDormant { after.resumeState = nil }
                }
            }
        }
        after.proof = merged
        after.applicationUsername = submission.applicationUsername
        after.userID = submission.userID
        after.amount = submission.amount
        after.currency = submission.currency
        after.createdAt = submission.createdAt.map { min($0, now) }
        after.contentHash = candidate.contentHash
        after.proofRevision += 1
        after.updatedAt = now
        if after.state != record.state { after.reason = .proofReplaced }
        // A held order whose proof revives the state it was held in (escalated → pending): what
        // was kept aside for its release no longer applies, as it would not for an order not held.
        if record.state == .held && after.resumeState != record.resumeState {
            after.heldResumeState = nil
            after.heldReason = .proofReplaced
        }
        let transition = PlannedTransition(
            at: now, actor: .daemon, from: record.state, to: after.state,
            reason: Reason(.proofReplaced, detail: "new proof from spool file \(candidate.fileName)"))
        return (OrderPlan(record: after, raw: candidate.raw, transitions: [transition]), .proofReplaced(from: record.state, to: after.state))
    }

    static func duplicate(_ record: OrderRecord, why: String, _ candidate: IngestCandidate, now: Date) -> (plan: OrderPlan?, outcome: IngestOutcome) {
        let transition = PlannedTransition(
            at: now, actor: .daemon, from: record.state, to: record.state,
            reason: Reason(.duplicateIgnored, detail: "\(why) (spool file \(candidate.fileName))"))
        return (.historyOnly(record, [transition]), .duplicateIgnored(state: record.state, why: why))
    }

    static func insert(_ candidate: IngestCandidate, verifiers: ConfiguredVerifiers, now: Date) -> (plan: OrderPlan?, outcome: IngestOutcome) {
        let submission = candidate.submission
        let usable = submission.proof.isUsable(by: verifiers)
        let state: OrderState = usable ? .pending : .waiting
        let waiting = verifiers.waitingReason(for: submission.proof)
        let reason: ReasonCode = usable ? .ingested : waiting.code
        let record = OrderRecord(
            reference: 0, orderID: submission.orderID, productID: submission.productID, state: state, reason: reason,
            proof: submission.proof, applicationUsername: submission.applicationUsername, userID: submission.userID,
            amount: submission.amount, currency: submission.currency, createdAt: submission.createdAt.map { min($0, now) },
            contentHash: candidate.contentHash, receivedAt: now, updatedAt: now, nextAttemptAt: usable ? now : nil,
            origin: candidate.origin)
        // An order no spool file brought names where it came from instead (``IngestCandidate/fileName``).
        let source = candidate.origin == nil ? "spool file \(candidate.fileName)" : candidate.fileName
        let detail = usable ? "from \(source)" : "from \(source); \(waiting.detail ?? waiting.code.rawValue)"
        let transition = PlannedTransition(at: now, actor: .daemon, from: nil, to: state, reason: Reason(reason, detail: detail))
        return (OrderPlan(record: record, raw: candidate.raw, transitions: [transition]), .accepted(state))
    }
}
