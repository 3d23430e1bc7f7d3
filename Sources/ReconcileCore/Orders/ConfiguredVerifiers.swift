/// The verifiers a configuration has (DESIGN §3, §5): `[Verifier]` with its `Kind=`, and
/// whether `[GooglePlay]` is there. Decides which orders can be verified now and, for those that
/// cannot, which section they wait for.
public struct ConfiguredVerifiers: Sendable, Hashable, CustomStringConvertible {
    /// `[Verifier] Kind=`; `nil` when there is no `[Verifier]` (a Google Play-only daemon).
    public var kind: VerifierKind?
    /// Whether `[GooglePlay]` is configured.
    public var googlePlay: Bool
    /// `[GooglePlay] PackageName=`: the only packages an order may name (empty: not checked, as
    /// without `[GooglePlay]`, where `Kind=http`'s merchant decides).
    public var playPackages: [String]

    public init(kind: VerifierKind?, googlePlay: Bool = false, playPackages: [String] = []) {
        self.kind = kind
        self.googlePlay = googlePlay
        self.playPackages = playPackages
    }

    /// Why an order naming `packageName` is not this daemon's to verify (the order's own
    /// `package_name` must never choose which app's purchase is accepted), or `nil`.
    public func foreignPackageProblem(_ packageName: String?) -> String? {
        guard let packageName, !playPackages.isEmpty, !playPackages.contains(packageName) else { return nil }
        return ConfiguredVerifiers.foreignPackageDetail(packageName, configured: playPackages)
    }

    /// The detail of a `foreign_package` quarantine or escalation.
    public static func foreignPackageDetail(_ packageName: String, configured: [String]) -> String {
        "package_name \(OrderFileParser.quoted(packageName)) is not one of [GooglePlay] PackageName= (\(configured.joined(separator: " "))): another app's purchase is not granted here"
    }

    /// The section an order with `proof` needs and this configuration lacks, or `nil` when the
    /// section is there (its kind may still be unable to use the proof).
    public func missingSection(for proof: OrderProof) -> String? {
        if proof.isGooglePlay {
            return googlePlay || kind == .http ? nil : "[GooglePlay]"
        }
        return kind == nil ? "[Verifier]" : nil
    }

    /// Why an order with `proof` waits: `no_google_play_section` or `no_verifier_section` when its
    /// section is missing, else `no_usable_proof` (the kind cannot use what it carries).
    public func waitingReason(for proof: OrderProof) -> Reason {
        switch missingSection(for: proof) {
        case "[GooglePlay]"?:
            Reason(.noGooglePlaySection, detail: "no [GooglePlay] section is configured: the order waits until a reload adds one")
        case "[Verifier]"?:
            Reason(.noVerifierSection, detail: "no [Verifier] section is configured: the order waits until a reload adds one")
        default:
            Reason(.noUsableProof, detail: "Kind=\(kind?.rawValue ?? "?") cannot verify the proof it carries")
        }
    }

    /// `Kind=apple`, `Kind=http and [GooglePlay]`, `[GooglePlay]`.
    public var description: String {
        switch (kind, googlePlay) {
        case (let kind?, true): "Kind=\(kind.rawValue) and [GooglePlay]"
        case (let kind?, false): "Kind=\(kind.rawValue)"
        case (nil, true): "[GooglePlay]"
        case (nil, false): "no verifier"
        }
    }
}
