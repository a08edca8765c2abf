// swift-tools-version:6.1
//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//

import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "SpeziAccountStore",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "EventLogProtocol", targets: ["EventLogProtocol"]),
        .library(name: "EventLog", targets: ["EventLog"]),
        .library(name: "PostgresEventLog", targets: ["PostgresEventLog"]),
        .library(name: "Projections", targets: ["Projections"]),
        .library(name: "Spezi", targets: ["Spezi"]),
        .library(name: "SpeziAccount", targets: ["SpeziAccount"]),
        .library(name: "SpeziAccountStore", targets: ["SpeziAccountStore"]),
        .library(name: "AccountStorePostgres", targets: ["AccountStorePostgres"]),
        .library(name: "SpeziAccountTesting", targets: ["SpeziAccountTesting"]),
        .library(name: "SpeziTesting", targets: ["SpeziTesting"]),
        .library(name: "AccountServer", targets: ["AccountServer"]),
        .library(name: "RemoteAccountService", targets: ["RemoteAccountService"])
    ],
    // `swift build --traits OpenTelemetry`: `accountctl serve --otel-endpoint` exports traces with
    // swift-otel (OTLP over HTTP). Off by default: nothing of swift-otel is built or linked then.
    traits: [
        .trait(name: "OpenTelemetry", description: "accountctl serve --otel-endpoint: traces exported over OTLP/HTTP by swift-otel")
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.0.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        // Only for OpenAPIClientTests: the client swift-openapi-generator makes from openapi.yaml.
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.81.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax.git", from: "603.0.0"),
        // `swift package generate-documentation` (Tools/check-docs.sh); no code of it is linked.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // LMDB, the C library (Debian: liblmdb-dev).
        .systemLibrary(
            name: "CLMDB",
            pkgConfig: "lmdb",
            providers: [.apt(["liblmdb-dev"])]
        ),
        // A thin, safe Swift layer over LMDB: environment, transactions, databases, cursors,
        // map growth, the single writer thread. Shared by the log and the projections.
        .target(
            name: "LMDB",
            dependencies: ["CLMDB", .product(name: "Logging", package: "swift-log")]
        ),
        // Argon2, the reference C library (Debian: libargon2-dev), for Argon2id password hashes.
        .systemLibrary(
            name: "CArgon2",
            pkgConfig: "libargon2",
            providers: [.apt(["libargon2-dev"])]
        ),
        // CRC-32C with the CPU's instruction (SSE4.2 / ARMv8 CRC), for record checksums.
        .target(name: "CChecksum"),
        // UTS #39 confusable skeletons and restriction levels from ICU's spoof checker (Debian:
        // libicu-dev), behind plain C types: for which user ids collide.
        .target(name: "CUnicodeSecurity", linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]),
        // A few threads of their own for blocking work (commits, flushes, hashing), off Swift's pool.
        .target(
            name: "BlockingPool",
            dependencies: [.product(name: "DequeModule", package: "swift-collections")]
        ),
        // The backend-neutral vocabulary of the log and the protocol every log backend conforms to.
        .target(name: "EventLogProtocol"),
        // The record layout both log backends store and hash (FORMAT.md): encoding, limits, CRC-32C,
        // the SHA-256 chain. No storage engine in it.
        .target(
            name: "LogRecordFormat",
            dependencies: ["EventLogProtocol", "CChecksum", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The checks every log backend must pass (no test framework imported; the test kit re-exports it).
        .target(name: "EventLogConformance", dependencies: ["EventLogProtocol"]),
        // The generic, durable, append-only log on LMDB (the embedded backend). Knows bytes and
        // stream ids, nothing of accounts.
        .target(
            name: "EventLog",
            dependencies: [
                "EventLogProtocol",
                "BlockingPool",
                "CChecksum",
                "LogRecordFormat",
                "LMDB",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "DequeModule", package: "swift-collections")
            ]
        ),
        // Where a key vault keeps its bytes (a file, PostgreSQL tables): the protocol only.
        .target(name: "KeyVaultStorage"),
        // The log on PostgreSQL, for several app servers on one shared log (postgres-nio).
        .target(
            name: "PostgresEventLog",
            dependencies: [
                "EventLogProtocol",
                "LogRecordFormat",
                "KeyVaultStorage",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // Read models built by replaying the log: generations, checkpoints, blue/green rebuilds.
        .target(
            name: "Projections",
            dependencies: [
                "EventLogProtocol", "BlockingPool", "LMDB", .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                // The tracing API only (spans go nowhere until a program bootstraps a tracer).
                .product(name: "Tracing", package: "swift-distributed-tracing")
            ]),
        // A small module runtime for Linux: Module, @Dependency, Configuration, Standard.
        .target(name: "Spezi"),
        // The @AccountKey and @KeyEntry macros.
        .macro(
            name: "SpeziAccountMacros",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax")
            ]
        ),
        // The seeds' account model, on Spezi. Knows nothing of LMDB.
        .target(
            name: "SpeziAccount",
            dependencies: ["Spezi", "SpeziAccountMacros", .product(name: "Logging", package: "swift-log")]
        ),
        // Password hashes (Argon2id with the reference library, scrypt), the key vault of
        // crypto-shredding and the sealing of personal data: the store's secrets, nothing of accounts.
        .target(
            name: "AccountSecurity",
            dependencies: [
                "CArgon2", "CChecksum", "BlockingPool", "KeyVaultStorage",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto")
            ]
        ),
        // The event-sourced account store: typed events, service, projections on the log.
        .target(
            name: "SpeziAccountStore",
            dependencies: [
                "AccountSecurity",
                "CChecksum",
                "CUnicodeSecurity",
                "EventLogProtocol",
                "EventLog",
                "KeyVaultStorage",
                "Projections",
                "BlockingPool",
                "Spezi",
                "SpeziAccount",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing")
            ]
        ),
        // Opening and importing into `postgres://` log locations, registered at start-up, so that
        // the embedded store never links PostgreSQL's client.
        .target(
            name: "AccountStorePostgres",
            dependencies: [
                "SpeziAccountStore", "PostgresEventLog", "EventLogProtocol", "KeyVaultStorage",
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // The account server over HTTP (Hummingbird 2): JSON routes over an `AccountStore`, bearer
        // sessions, problem details. Hummingbird's types stay inside it.
        .target(
            name: "AccountServer",
            dependencies: [
                "SpeziAccountStore", "AccountSecurity", "SpeziAccount", "EventLogProtocol", "Projections", "IdentityTokens",
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            // Served as they are: the OpenAPI document and the audit console's page, style sheet
            // and script (checked by Tests/Browser/check_web_assets.py).
            resources: [.copy("openapi.yaml"), .copy("Console")]
        ),
        // Verifies OpenID Connect identity tokens (Sign in with Apple, Google, any provider with a
        // JWKS): jwt-kit for the signatures, AsyncHTTPClient for the key sets. Only the server links
        // it; the store keeps the links as events and never imports jwt-kit.
        .target(
            name: "IdentityTokens",
            dependencies: [
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio")
            ]
        ),
        // An `AccountService` for apps that talks to an account server: AsyncHTTPClient on Linux,
        // URLSession elsewhere, behind a small transport protocol.
        .target(
            name: "RemoteAccountService",
            dependencies: [
                "Spezi", "SpeziAccount",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(platforms: [.linux])),
                .product(name: "Logging", package: "swift-log")
            ]
        ),
        // The child process that the log's crash test kills at random moments.
        .executableTarget(name: "log-crash-child", dependencies: ["EventLog", "LMDB"], path: "Tools/log-crash-child"),
        // The test kit: logs built from event lists, replays, given/when/then, deterministic clock
        // and ids, headless versions of the seed's UI-test helpers. No XCTest or Testing import.
        .target(
            name: "SpeziAccountTesting",
            dependencies: [
                "SpeziAccountStore", "SpeziAccount", "Projections", "EventLogProtocol", "EventLogConformance", "PostgresTestServer",
                "TestProcesses", .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        // Upstream's test helper for modules: dependency resolution without an app.
        .target(name: "SpeziTesting", dependencies: ["Spezi"]),
        // What the tests and the crash test share (not a product): the I/O fault shim, power loss,
        // a seedable generator, the built executables.
        .target(
            name: "TestSupport",
            dependencies: ["EventLogProtocol", "PostgresTestServer", "TestProcesses", .product(name: "MetricsTestKit", package: "swift-metrics")]),
        // A throwaway PostgreSQL cluster (initdb, pg_ctl) for tests and benchmarks.
        .target(name: "PostgresTestServer", dependencies: ["BlockingPool", "TestProcesses"]),
        // The fast and the integration tier of the tests (a Swift Testing trait).
        .target(name: "TestTiers"),
        // Child processes for tests and tools: posix_spawn with no inherited descriptor, a process
        // group each, and a guardian that ends them when the process that started them ends.
        .target(name: "TestProcesses"),
        // Kills a store workload with SIGKILL hundreds of times and checks the store after each restart.
        .executableTarget(
            name: "crash-test",
            dependencies: [
                "SpeziAccountStore", "AccountStorePostgres", "EventLog", "EventLogProtocol", "SpeziAccount", "TestSupport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ],
            path: "Tools/crash-test"
        ),
        // The subject of the child guardian's test: starts children, then waits to be killed.
        .executableTarget(
            name: "child-guardian-check", dependencies: ["TestProcesses", "PostgresTestServer"], path: "Tools/child-guardian-check"),
        // The subject of the constant-time test (run under valgrind's callgrind by the test).
        .executableTarget(name: "timing-check", dependencies: ["SpeziAccountStore"], path: "Tools/timing-check"),
        // The command-line tool: a demo, histories, verification, statistics and account commands on a store.
        .executableTarget(
            name: "accountctl",
            dependencies: [
                "SpeziAccountStore", "AccountStorePostgres", "EventLogProtocol", "Projections", "SpeziAccount", "AccountServer",
                "IdentityTokens",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // `serve --metrics-token-file`: the metrics backend; only the tool links it.
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                // `serve --otel-endpoint`, with the OpenTelemetry trait only.
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OpenTelemetry"]))
            ],
            path: "Tools/accountctl"
        ),
        .testTarget(
            name: "EventLogTests",
            dependencies: [
                "TestTiers", "EventLog", "LMDB", "LogRecordFormat", "log-crash-child", "TestSupport", "EventLogConformance",
                .product(name: "MetricsTestKit", package: "swift-metrics")
            ]),
        .testTarget(
            name: "PostgresEventLogTests",
            dependencies: [
                "TestTiers",
                "PostgresEventLog", "EventLog", "EventLogConformance", "TestSupport", .product(name: "PostgresNIO", package: "postgres-nio")
            ]),
        .testTarget(
            name: "ProjectionsTests",
            dependencies: ["TestTiers", "Projections", "EventLog", "LMDB", "TestSupport", .product(name: "MetricsTestKit", package: "swift-metrics")]),
        .testTarget(name: "BlockingPoolTests", dependencies: ["BlockingPool", "TestSupport"]),
        .testTarget(name: "SpeziTests", dependencies: ["Spezi", "SpeziTesting"]),
        .testTarget(
            name: "SpeziAccountMacrosTests",
            dependencies: [
                "SpeziAccountMacros",
                .product(name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax")
            ]
        ),
        .testTarget(name: "SpeziAccountTests", dependencies: ["Spezi", "SpeziAccount"]),
        .testTarget(
            name: "SpeziAccountStoreTests",
            dependencies: [
                "AccountSecurity",
                "TestTiers",
                "SpeziAccountStore", "EventLog", "LMDB", "SpeziAccount", "Spezi", "crash-test", "timing-check", "SpeziAccountTesting", "accountctl",
                "CArgon2",
                "TestSupport", "PostgresEventLog", "AccountStorePostgres",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ]),
        .testTarget(name: "AccountctlTests", dependencies: ["TestTiers", "accountctl", "TestSupport", "child-guardian-check"]),
        .testTarget(
            name: "AccountServerTests",
            dependencies: [
                "TestTiers",
                "AccountServer", "AccountSecurity", "SpeziAccountStore", "SpeziAccount", "accountctl", "TestSupport", "RemoteAccountService", "Spezi",
                "SpeziAccountTesting",
                "EventLog", "EventLogProtocol", "IdentityTokens",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing")
            ]),
        // The client a Swift team would generate from openapi.yaml (Tools/generate-openapi-client.sh,
        // committed under Generated/), run against the server with the generator's defaults.
        .testTarget(
            name: "OpenAPIClientTests",
            dependencies: [
                "TestTiers", "AccountServer", "SpeziAccountStore", "SpeziAccount",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
            ],
            exclude: ["Generated/openapi.yaml.sha256"])
    ],
    swiftLanguageModes: [.v6]
)
