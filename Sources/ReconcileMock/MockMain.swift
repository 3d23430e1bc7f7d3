import Foundation
import Glibc
import ReconcileCore
import Synchronization
import ReconcileFoundation

/// `reconcile-mock`'s command line. The mock always ends on its own: after `--idle-exit` without
/// a request (default 60 s) or `--lifetime` in all, so a test that dies never leaves it behind.
public enum MockMain {
    public static let usage = """
        USAGE: reconcile-mock [--port N] [--port-file PATH] [--host ADDRESS] [--shared-secret S]
                              [--token T] [--faults JSON] [--seed N] [--idle-exit SPAN] [--lifetime SPAN]
                              [--appstore-key PEM --appstore-chain LEAF,INTERMEDIATE,ROOT
                               --appstore-token-key PEM --bundle-id ID] [--googleplay-key JSON]
                              [--pubsub-ack-deadline SECONDS]

        Serves, on loopback only:
          POST /verifyReceipt, /sandbox/verifyReceipt   Apple's verifyReceipt (production, sandbox)
          POST /merchant/verify                         the merchant protocol (Kind=http)
          POST /deliver                                 delivery
          POST /revocation                              revocation notices ([Revocation] URL=),
                                                        recorded per Idempotency-Key
          GET  /appstore/{production,sandbox}/inApps/…  the App Store Server API, with
                                                        --appstore-key (the leaf's private key),
                                                        --appstore-chain (PEM certificates) and
                                                        --appstore-token-key (the public key of
                                                        the daemon's In-App Purchase key)
          POST /_mock/appstore/transactions             register App Store transactions
          POST /_mock/appstore/notifications            register App Store notifications (notification history)
          POST /googleplay/token, GET/POST /googleplay/androidpublisher/v3/…
                                                        Google Play's token endpoint and
                                                        purchases API, with --googleplay-key (a
                                                        test service account's JSON key: grants
                                                        must be signed with it and name its
                                                        token_uri)
          POST /_mock/googleplay/{purchases,config,revoke-tokens}   script Google Play
          POST /pubsub/v1/projects/P/subscriptions/S:{pull,acknowledge}
                                                        Cloud Pub/Sub pull, with --googleplay-key
                                                        (tokens granted the pubsub scope); a
                                                        pulled message comes again after
                                                        --pubsub-ack-deadline (default 10 s)
                                                        unless acknowledged
          POST /_mock/pubsub/{publish,config}           publish messages, make pull or
                                                        acknowledge fail
          GET  /_mock/stats, POST /_mock/config, POST /_mock/reset-stats
        Test receipts are base64 of a JSON object saying what to answer (see MockReceipt).
        """

    public static func run(_ arguments: [String]) -> Int32 {
        var port: UInt16 = 0
        var host = "127.0.0.1"
        var portFile: String?
        var settings = MockService.Settings()
        var faults = MockFaults()
        var idleExit: Duration = .seconds(60)
        var lifetime: Duration = .seconds(3600)
        var appStoreFiles: (key: String?, chain: [String], tokenKey: String?, bundleID: String) = (nil, [], nil, "com.example.app")
        var googlePlayKey: String?
        var pubSubAckDeadline: TimeInterval?
        var index = 0
        func value() -> String? {
            index += 1
            return index < arguments.count ? arguments[index] : nil
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--port":
                guard let text = value(), let number = UInt16(text) else { return usageError("--port needs a number") }
                port = number
            case "--host":
                guard let text = value() else { return usageError("--host needs an address") }
                host = text
            case "--port-file": portFile = value()
            case "--shared-secret": settings.sharedSecret = value()
            case "--token": settings.token = value()
            case "--seed": settings.seed = value().flatMap(UInt64.init)
            case "--faults":
                guard let text = value(), case .object(let object)? = try? JSONParser().parse(text) else {
                    return usageError("--faults needs a JSON object")
                }
                do { try faults.apply(object) } catch { return usageError(error.description) }
            case "--idle-exit":
                guard let span = value().flatMap(TimeSpan.parse) else { return usageError("--idle-exit needs a time span") }
                idleExit = span
            case "--lifetime":
                guard let span = value().flatMap(TimeSpan.parse) else { return usageError("--lifetime needs a time span") }
                lifetime = span
            case "--appstore-key": appStoreFiles.key = value()
            case "--appstore-chain": appStoreFiles.chain = (value() ?? "").split(separator: ",").map(String.init)
            case "--appstore-token-key": appStoreFiles.tokenKey = value()
            case "--googleplay-key":
                guard let path = value() else { return usageError("--googleplay-key needs a key file") }
                googlePlayKey = path
            case "--pubsub-ack-deadline":
                guard let seconds = value().flatMap(Double.init), seconds > 0, seconds <= 600 else {
                    return usageError("--pubsub-ack-deadline needs a number of seconds (more than 0, at most 600)")
                }
                pubSubAckDeadline = seconds
            case "--bundle-id":
                guard let text = value() else { return usageError("--bundle-id needs a bundle id") }
                appStoreFiles.bundleID = text
            case "-h", "--help":
                print(usage)
                return 0
            default:
                return usageError("Unknown option '\(argument)'")
            }
            index += 1
        }
        if let path = googlePlayKey {
            do {
                settings.googlePlay = try MockGooglePlay.load(keyFile: path, pubSubAckDeadline: pubSubAckDeadline ?? MockPubSub.defaultAckDeadline)
            } catch {
                return usageError("cannot load the Google Play key file: \(error)")
            }
        } else if pubSubAckDeadline != nil {
            return usageError("--pubsub-ack-deadline needs --googleplay-key (Pub/Sub takes Google Play's tokens)")
        }
        if let keyPath = appStoreFiles.key {
            guard let tokenKeyPath = appStoreFiles.tokenKey, appStoreFiles.chain.count == 3 else {
                return usageError("--appstore-key needs --appstore-chain LEAF,INTERMEDIATE,ROOT and --appstore-token-key")
            }
            do {
                settings.appStore = try MockAppStore.load(
                    keyPath: keyPath, chainPaths: appStoreFiles.chain, tokenKeyPath: tokenKeyPath, bundleID: appStoreFiles.bundleID)
            } catch {
                return usageError("cannot load the App Store signing files: \(error)")
            }
        }
        let lastRequest = Mutex(ContinuousClock.now)
        let service = MockService(settings: settings, faults: faults) { lastRequest.withLock { $0 = .now } }
        let server: MockHTTPServer
        do {
            server = try MockHTTPServer(host: host, port: port) { service.handle($0) }
        } catch {
            FileHandle.standardError.write(Data("reconcile-mock: \(error)\n".utf8))
            return 1
        }
        if let portFile {
            // Written whole, then renamed, so a reader never sees half a number.
            guard FileManager.default.createFile(atPath: portFile + ".tmp", contents: Data("\(server.port)\n".utf8)),
                rename(portFile + ".tmp", portFile) == 0
            else {
                FileHandle.standardError.write(Data("reconcile-mock: cannot write \(portFile)\n".utf8))
                return 1
            }
        }
        FileHandle.standardOutput.write(Data("reconcile-mock listening on \(host):\(server.port)\n".utf8))
        let started = ContinuousClock.now
        while true {
            Thread.sleep(forTimeInterval: 0.5)
            let idle = ContinuousClock.now - lastRequest.withLock { $0 }
            if idle > idleExit || ContinuousClock.now - started > lifetime {
                server.stop()
                return 0
            }
        }
    }

    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("Error: \(message)\n\(usage)\n".utf8))
        return 64
    }
}
