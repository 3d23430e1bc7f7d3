import Dispatch
import Glibc

/// Unix signals as an `AsyncStream` (the swift-service-lifecycle pattern): each signal is set to
/// `SIG_IGN` and then watched by a `DispatchSource`, so none is lost or kills the process once
/// the stream exists.
///
/// One consumer. Create it before reporting readiness; keep it alive as long as signals matter.
public final class SignalStream {
    public let signals: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    public init(_ watched: [Int32]) {
        let queue = DispatchQueue(label: "reconcile.signals")
        let (stream, continuation) = AsyncStream<Int32>.makeStream(bufferingPolicy: .unbounded)
        var sources: [any DispatchSourceSignal] = []
        for number in watched {
            // Ignore first, then watch: dispatch installs its own handler; the other order
            // would leave the signal ignored.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { @Sendable in continuation.yield(number) }
            source.resume()
            sources.append(source)
        }
        self.signals = stream
        self.sources = sources
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// The signal's name (`SIGTERM`).
    public static func name(of number: Int32) -> String {
        switch number {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        case SIGUSR1: "SIGUSR1"
        case SIGUSR2: "SIGUSR2"
        case SIGQUIT: "SIGQUIT"
        default: "signal \(number)"
        }
    }
}
