// swift-tools-version:6.0
//
// reconcile: a daemon that takes paid in-app purchase orders from a spool
// directory into a durable store, verifies them and finishes or escalates them.
//
// Layers, from the inside out:
//   ReconcileCore    pure model: orders, states, configuration, JSON, backoff; no I/O
//   ReconcileStore   SQLite store behind the core's OrderStore protocol
//   ReconcileSystem  Linux adapters: files, signals, lock file, logging backends
//   ReconcileCrypto  OpenSSL's libcrypto: hashing, ES256, App Store JWTs and signed data, receipts
//   ReconcileSpool   the spool directory: watch, read, ingest, quarantine
//   ReconcileDaemon  wires the adapters into the running daemon
//   ReconcileCLI     the operator's command line
//   reconciled, reconcilectl, reconcile-bench: thin executables
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "reconcile",
    products: [
        .executable(name: "reconciled", targets: ["reconciled"]),
        .executable(name: "reconcilectl", targets: ["reconcilectl"]),
    ],
    targets: [
        // MARK: - C libraries from Debian packages
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLinux"),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // MARK: - Libraries
        .target(name: "ReconcileCore", swiftSettings: strictSettings),
        .target(name: "ReconcileStore", dependencies: ["ReconcileCore", "CSQLite"], swiftSettings: strictSettings),
        .target(
            name: "ReconcileSystem",
            dependencies: ["ReconcileCore", "CLinux", "CSystemd"],
            swiftSettings: strictSettings
        ),
        .target(name: "ReconcileCrypto", dependencies: ["CCrypto"], swiftSettings: strictSettings),
        .target(name: "ReconcileHTTP", dependencies: ["ReconcileCore", "CCurl"], swiftSettings: strictSettings),
        .target(name: "ReconcileMock", dependencies: ["ReconcileCore", "ReconcileCrypto"], swiftSettings: strictSettings),
        .target(
            name: "ReconcileEngine", dependencies: ["ReconcileCore", "ReconcileSystem", "ReconcileHTTP", "ReconcileCrypto"],
            swiftSettings: strictSettings),
        .target(
            name: "ReconcileSpool",
            dependencies: ["ReconcileCore", "ReconcileSystem", "ReconcileCrypto", "CLinux"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ReconcileDaemon",
            dependencies: ["ReconcileCore", "ReconcileStore", "ReconcileSystem", "ReconcileSpool", "ReconcileEngine", "ReconcileHTTP"],
            swiftSettings: strictSettings
        ),
        .target(
            // ReconcileEngine: check-config reads secrets, keys and certificates as the daemon does.
            name: "ReconcileCLI",
            dependencies: ["ReconcileCore", "ReconcileStore", "ReconcileSystem", "ReconcileSpool", "ReconcileCrypto", "ReconcileEngine", "CLinux"],
            swiftSettings: strictSettings
        ),

        // MARK: - Executables
        .executableTarget(name: "reconciled", dependencies: ["ReconcileDaemon"], swiftSettings: strictSettings),
        .executableTarget(name: "reconcilectl", dependencies: ["ReconcileCLI"], swiftSettings: strictSettings),
        .executableTarget(name: "reconcile-mock", dependencies: ["ReconcileMock", "ReconcileCore"], swiftSettings: strictSettings),
        .executableTarget(
            name: "reconcile-bench",
            dependencies: [
                "ReconcileCore", "ReconcileStore", "ReconcileSystem", "ReconcileSpool", "ReconcileCrypto", "ReconcileEngine",
                "ReconcileHTTP", "ReconcileMock", "ReconcileDaemon",
            ],
            swiftSettings: strictSettings
        ),

        // MARK: - Tests
        // CCurl: libssl, for the TLS server in front of the tests' HTTP servers.
        .target(name: "TestSupport", dependencies: ["CCurl"], path: "Tests/TestSupport", swiftSettings: strictSettings),
        .testTarget(name: "ReconcileCoreTests", dependencies: ["ReconcileCore", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileStoreTests",
            dependencies: ["ReconcileStore", "ReconcileCore", "CSQLite", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileSystemTests",
            dependencies: ["ReconcileSystem", "ReconcileCore", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileCryptoTests", dependencies: ["ReconcileCrypto", "ReconcileCore", "TestSupport"], resources: [.copy("Fixtures")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileHTTPTests", dependencies: ["ReconcileHTTP", "ReconcileMock", "ReconcileCore", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileEngineTests",
            dependencies: ["ReconcileEngine", "ReconcileCore", "ReconcileStore", "ReconcileMock", "ReconcileHTTP", "ReconcileCrypto", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileMockTests", dependencies: ["ReconcileMock", "ReconcileCore", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileSpoolTests",
            dependencies: ["ReconcileSpool", "ReconcileStore", "ReconcileSystem", "ReconcileCore", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileDaemonTests",
            dependencies: [
                "ReconcileDaemon", "ReconcileCore", "ReconcileStore", "ReconcileEngine", "ReconcileSpool", "ReconcileSystem", "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileCLITests",
            dependencies: ["ReconcileCLI", "ReconcileCore", "ReconcileStore", "TestSupport"],
            exclude: ["Snapshots"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "reconciled", "reconcilectl", "reconcile-mock", "ReconcileStore", "ReconcileCore", "ReconcileMock", "ReconcileHTTP", "ReconcileSystem",
                "ReconcileCrypto",
                "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
