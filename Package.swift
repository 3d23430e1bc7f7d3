// swift-tools-version:6.0
//
// reconcile: a daemon that takes paid in-app purchase orders from a spool
// directory into a durable store, verifies them and finishes or escalates them.
//
// Layers, from the inside out:
//   ReconcileFoundation  generic infrastructure, nothing of orders: JSON, the logging interface
//                    and journal entries, Prometheus exposition, INI files and their errors, time
//                    spans, sizes, RFC 3339, printable text; no I/O
//   ReconcileCore    the pure core: orders, states and the rules of every transition (what a
//                    completion, an operator action, a lease or a spool file does), backoff,
//                    circuits and admission, answer classification, configuration; no I/O
//   ReconcileStore   the one relational store behind the core's OrderStore protocol (read, apply
//                    a rule, write), over a small SQL layer both engines share
//   ReconcileSQLite  SQLite's connection, file checks, WAL, backup and restore: the default store
//   ReconcilePostgreSQL  libpq's connection, nodes, leases, LISTEN: the shared store; copy-store
//   ReconcileSystem  Linux adapters: files, signals, locks, the control socket, logging backends,
//                    sd_notify, timers, the service group that runs the daemon's parts
//   ReconcileCrypto  OpenSSL's libcrypto: hashing, ES256, App Store JWTs and signed data, receipts
//   ReconcileHTTP    libcurl's multi interface: the HTTP transport
//   ReconcileSpool   the spool directory: watch, read, ingest, quarantine
//   ReconcileEngine  the scheduler (turn loop, admission, reporting), the verifiers and delivery
//                    client over one exchange helper, the escalation runner
//   ReconcileCredentials  what the configuration names outside itself, read and checked:
//                    secrets, keys, service accounts, root certificates, CAFile= anchors (the
//                    daemon and check-config share it; it links no engine or HTTP)
//   ReconcileDaemon  wiring: configuration to verifiers, the daemon's services and lifecycle,
//                    the control handler, metrics
//   ReconcileCLI     the operator's command line (no daemon, engine or HTTP target below it)
//   ReconcileMock    the mock verification and delivery server (tests and benchmarks)
//   TestSupport      what tests and the benchmark share: child processes, temporary directories,
//                    a TLS server, test certificates, a throw-away PostgreSQL server
//   reconciled, reconcilectl, reconcile-mock, reconcile-bench: thin executables
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
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),

        // MARK: - Libraries
        .target(name: "ReconcileFoundation", swiftSettings: strictSettings),
        .target(name: "ReconcileCore", dependencies: ["ReconcileFoundation"], swiftSettings: strictSettings),
        .target(name: "ReconcileStore", dependencies: ["ReconcileCore", "ReconcileFoundation"], swiftSettings: strictSettings),
        .target(name: "ReconcileSQLite", dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileStore", "CSQLite"], swiftSettings: strictSettings),
        .target(
            name: "ReconcilePostgreSQL", dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "CPostgres"],
            swiftSettings: strictSettings),
        .target(
            name: "ReconcileSystem",
            dependencies: ["ReconcileCore", "ReconcileFoundation", "CLinux", "CSystemd"],
            swiftSettings: strictSettings
        ),
        .target(name: "ReconcileCrypto", dependencies: ["CCrypto"], swiftSettings: strictSettings),
        .target(name: "ReconcileHTTP", dependencies: ["ReconcileCore", "ReconcileFoundation", "CCurl"], swiftSettings: strictSettings),
        .target(name: "ReconcileMock", dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileCrypto"], swiftSettings: strictSettings),
        .target(
            name: "ReconcileEngine", dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileSystem", "ReconcileCrypto"],
            swiftSettings: strictSettings),
        .target(
            name: "ReconcileSpool",
            dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileSystem", "ReconcileCrypto", "CLinux"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ReconcileCredentials", dependencies: ["ReconcileCore", "ReconcileFoundation", "ReconcileSystem", "ReconcileCrypto"],
            swiftSettings: strictSettings),
        .target(
            name: "ReconcileDaemon",
            dependencies: [
                "ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileSystem", "ReconcileSpool", "ReconcileEngine",
                "ReconcileHTTP", "ReconcileCrypto", "ReconcileCredentials",
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "ReconcileCLI",
            dependencies: [
                "ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileSystem", "ReconcileSpool", "ReconcileCrypto",
                "ReconcileCredentials", "CLinux",
            ],
            swiftSettings: strictSettings
        ),

        // What the tests and the benchmark share: child processes, temporary directories, a TLS
        // server (CCurl: libssl), test certificates, a throw-away PostgreSQL server.
        .target(name: "TestSupport", dependencies: ["ReconcileCore", "ReconcileFoundation", "CCurl"], swiftSettings: strictSettings),

        // MARK: - Executables
        .executableTarget(name: "reconciled", dependencies: ["ReconcileDaemon"], swiftSettings: strictSettings),
        .executableTarget(name: "reconcilectl", dependencies: ["ReconcileCLI"], swiftSettings: strictSettings),
        .executableTarget(name: "reconcile-mock", dependencies: ["ReconcileMock", "ReconcileCore"], swiftSettings: strictSettings),
        .executableTarget(
            name: "reconcile-bench",
            dependencies: [
                "ReconcileCore", "ReconcileFoundation", "ReconcileCrypto", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileSpool", "ReconcileEngine",
                "ReconcileHTTP", "ReconcileMock", "ReconcileDaemon",
                // The PostgreSQL scenarios' throw-away server.
                "TestSupport",
            ],
            swiftSettings: strictSettings
        ),

        // MARK: - Tests
        .testTarget(name: "DocumentationTests", dependencies: ["ReconcileCore", "ReconcileCLI"], swiftSettings: strictSettings),
        .testTarget(name: "ReconcileFoundationTests", dependencies: ["ReconcileFoundation", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(name: "ReconcileCoreTests", dependencies: ["ReconcileCore", "ReconcileFoundation", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileStoreTests",
            dependencies: ["ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileCore", "ReconcileFoundation", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileSystemTests",
            dependencies: ["ReconcileSystem", "ReconcileCore", "ReconcileFoundation", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileCryptoTests", dependencies: ["ReconcileCrypto", "ReconcileCore", "TestSupport"], resources: [.copy("Fixtures")],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileHTTPTests", dependencies: ["ReconcileHTTP", "ReconcileMock", "ReconcileCore", "ReconcileFoundation", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileEngineTests",
            dependencies: ["ReconcileEngine", "ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileCrypto", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileCredentialsTests", dependencies: ["ReconcileCredentials", "ReconcileCore", "ReconcileFoundation", "ReconcileSystem", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileMockTests", dependencies: ["ReconcileMock", "ReconcileCore", "ReconcileFoundation", "ReconcileCrypto", "TestSupport"],
            swiftSettings: strictSettings),
        .testTarget(
            name: "ReconcileSpoolTests",
            dependencies: ["ReconcileSpool", "ReconcileStore", "ReconcileSQLite", "ReconcileSystem", "ReconcileCore", "ReconcileFoundation", "TestSupport"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileDaemonTests",
            dependencies: [
                "ReconcileDaemon", "ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileEngine", "ReconcileSpool",
                "ReconcileSystem", "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReconcileCLITests",
            dependencies: ["ReconcileCLI", "ReconcileCore", "ReconcileFoundation", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileSpool", "TestSupport"],
            exclude: ["Snapshots"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "reconciled", "reconcilectl", "reconcile-mock", "ReconcileStore", "ReconcileSQLite", "ReconcilePostgreSQL", "ReconcileCore", "ReconcileFoundation", "ReconcileMock", "ReconcileHTTP", "ReconcileSystem",
                "ReconcileCrypto",
                "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
