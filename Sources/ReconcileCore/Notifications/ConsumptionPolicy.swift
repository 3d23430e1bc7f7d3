/// How the daemon answers Apple's `CONSUMPTION_REQUEST` (DESIGN §5a; `[Notifications]
/// ConsumptionAnswer=`, `CustomerConsented=`, `SampleContentProvided=`, `RefundPreference=`):
/// what the merchant configured, passed with each batch of notifications into the rules.
public struct ConsumptionPolicy: Sendable, Hashable {
    /// Apple's `refundPreference` of a `ConsumptionRequest`.
    public enum RefundPreference: String, Sendable, Hashable, CaseIterable {
        case decline = "DECLINE"
        case grantFull = "GRANT_FULL"
        // `GRANT_PRORATED` is left out: Apple takes it for auto-renewable subscriptions only, and
        // refuses an answer about any other purchase that carries it (review).

        /// Reads `decline`, `grant_full` in any case (so Apple's own spellings `DECLINE`,
        /// `GRANT_FULL` too).
        public init?(configured text: String) {
            self.init(rawValue: text.uppercased())
        }

        /// How the configuration writes it.
        public var configured: String { rawValue.lowercased() }
    }

    /// `ConsumptionAnswer=on`.
    public var answer: Bool
    /// `CustomerConsented=yes`: Apple accepts no answer without it.
    public var customerConsented: Bool
    /// `SampleContentProvided=`: a required field of the request.
    public var sampleContentProvided: Bool
    /// `RefundPreference=`; `nil`: left out of the request.
    public var refundPreference: RefundPreference?

    public init(answer: Bool = false, customerConsented: Bool = false, sampleContentProvided: Bool = false, refundPreference: RefundPreference? = nil) {
        self.answer = answer
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.refundPreference = refundPreference
    }

    /// `ConsumptionAnswer=off`: requests are recorded, never answered.
    public static let off = ConsumptionPolicy()

    /// Whether a matched request is answered: on, and the customer consented.
    public var answers: Bool { answer && customerConsented }
}
