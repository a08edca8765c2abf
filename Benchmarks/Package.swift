// swift-tools-version:6.1
//
// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// The benchmarks live in their own package so that users of the library never pull their
// dependencies. Run them from this folder:
//   swift run -c release peer-compare            # side-by-side ratios against raw LMDB and SQLite
//   swift run -c release server-load             # the account server and a CRUD peer under wrk (Debian's wrk)
//   swift package benchmark                       # ordo-one's benchmark suites

import Foundation
import PackageDescription

// A path dependency is named after its folder, and a clone may be checked out under any name.
let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent

let package = Package(
    name: "SpeziAccountStoreBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.0", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0")
    ],
    targets: [
        // LMDB's C API (Debian: liblmdb-dev) for the raw-LMDB peer.
        .systemLibrary(name: "CRawLMDB", path: "Sources/CRawLMDB", pkgConfig: "lmdb"),
        // One process, the same work on this project's log, on a raw LMDB loop and on SQLite
        // (through GRDB); prints ratios.
        .executableTarget(
            name: "peer-compare",
            dependencies: [
                .product(name: "EventLogProtocol", package: root),
                .product(name: "EventLog", package: root),
                "CRawLMDB",
                .product(name: "Projections", package: root),
                .product(name: "SpeziAccountStore", package: root),
                .product(name: "PostgresEventLog", package: root),
                .product(name: "SpeziAccountTesting", package: root),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio")
            ],
            path: "Sources/PeerCompare"
        ),
        // The plain CRUD account server that `server-load` measures the account server against:
        // the same routes on Hummingbird over one PostgreSQL (or SQLite) table of accounts and one
        // of sessions, passwords hashed with the store's `PasswordHasher`.
        .target(
            name: "CRUDPeer",
            dependencies: [
                .product(name: "SpeziAccountStore", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift")
            ],
            path: "Sources/CRUDPeer"
        ),
        // The account server under wrk on loopback: reads, modifications, logins, against the
        // framework's own floor and the CRUD peer in the same run.
        .executableTarget(
            name: "server-load",
            dependencies: [
                "CRUDPeer",
                .product(name: "AccountServer", package: root),
                .product(name: "SpeziAccountStore", package: root),
                .product(name: "SpeziAccount", package: root),
                .product(name: "SpeziAccountTesting", package: root)
            ],
            path: "Sources/ServerLoad"
        ),
        // Rebuild of the details cache (1 M events by default) against a payload-copy floor, with peak memory.
        .executableTarget(
            name: "store-rebuild",
            dependencies: [
                .product(name: "EventLogProtocol", package: root),
                .product(name: "SpeziAccountStore", package: root),
                .product(name: "SpeziAccountTesting", package: root),
                .product(name: "SpeziAccount", package: root),
                .product(name: "Projections", package: root),
                .product(name: "EventLog", package: root)
            ],
            path: "Sources/StoreRebuild"
        ),
        // One hot path per run (replay, rebuild, import, point reads, the server's routes) for
        // callgrind's instruction counts, and 64 durable writers (group) for perf.
        .executableTarget(
            name: "hot-paths",
            dependencies: [
                .product(name: "EventLogProtocol", package: root),
                .product(name: "AccountServer", package: root),
                .product(name: "EventLog", package: root),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "PostgresEventLog", package: root),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Projections", package: root),
                .product(name: "SpeziAccountStore", package: root)
            ],
            path: "Sources/HotPaths"
        ),
        // ordo-one/benchmark suites.
        .executableTarget(
            name: "EventLogBenchmarks",
            dependencies: [
                .product(name: "EventLogProtocol", package: root),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EventLog", package: root)
            ],
            path: "Benchmarks/EventLogBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        ),
        .executableTarget(
            name: "AccountStoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EventLog", package: root),
                .product(name: "Projections", package: root),
                .product(name: "SpeziAccountStore", package: root)
            ],
            path: "Benchmarks/AccountStoreBenchmarks",
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark")
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
