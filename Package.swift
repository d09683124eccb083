// swift-tools-version: 6.0
import PackageDescription

// Rave Backend: one executable per service, built from the shared modules below. The folders show the layers
// (Shared/System → Core → Transport → Wire → RPC → Data → Runtime → Services/); docs/ARCHITECTURE.md, "Modules".

let package = Package(
    name: "RaveBackend",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ravectl", targets: ["Ravectl"]),
        .library(name: "RaveClient", targets: ["RaveClient"]),
        .executable(name: "rave-protogen", targets: ["RaveProtoGen"]),
        .executable(name: "identity", targets: ["IdentityExecutable"]),
        .executable(name: "leaderboards", targets: ["LeaderboardsExecutable"]),
        .executable(name: "wallet", targets: ["WalletExecutable"]),
        .executable(name: "gateway", targets: ["GatewayExecutable"]),
        .executable(name: "social", targets: ["SocialExecutable"]),
        .executable(name: "push", targets: ["PushExecutable"]),
        .executable(name: "gifts", targets: ["GiftsExecutable"]),
        .executable(name: "rave-bench", targets: ["RaveBench"]),
    ],
    targets: [
        // MARK: - Shared/System: C libraries (pkg-config) and C shims
        .systemLibrary(name: "CProtobufC", path: "Shared/System/CProtobufC", pkgConfig: "libprotobuf-c"),
        .systemLibrary(name: "COpenSSL", path: "Shared/System/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CLibPQ", path: "Shared/System/CLibPQ", pkgConfig: "libpq"),
        .systemLibrary(name: "CCurl", path: "Shared/System/CCurl", pkgConfig: "libcurl"),
        .systemLibrary(name: "CNGHTTP2", path: "Shared/System/CNGHTTP2", pkgConfig: "libnghttp2"),
        .target(name: "CRaveSystem", path: "Shared/System/CRaveSystem"),
        .target(name: "CRaveTLS", dependencies: ["COpenSSL"], path: "Shared/System/CRaveTLS"),

        // MARK: - Shared/Core: crypto, tokens, outbound HTTP, logs and metrics, JSON strings
        .target(name: "RaveCrypto", dependencies: ["COpenSSL"], path: "Shared/Core/RaveCrypto"),
        .target(name: "RaveAuth", dependencies: ["RaveCrypto", "RaveJSON"], path: "Shared/Core/RaveAuth"),
        .target(name: "RaveHTTPClient", dependencies: ["CCurl"], path: "Shared/Core/RaveHTTPClient"),
        .target(name: "RaveMail", dependencies: ["CCurl"], path: "Shared/Core/RaveMail"),
        .target(name: "RaveTelemetry", path: "Shared/Core/RaveTelemetry"),
        .target(name: "RaveJSON", path: "Shared/Core/RaveJSON"),

        // MARK: - Shared/Transport: event loops, TCP, TLS, HTTP/1.1 servers
        .target(
            name: "RaveTransport",
            dependencies: ["CRaveSystem", "CRaveTLS", "COpenSSL", "RaveTelemetry"],
            path: "Shared/Transport/RaveTransport"
        ),
        .target(name: "RaveHTTP", dependencies: ["RaveTransport", "CNGHTTP2"], path: "Shared/Transport/RaveHTTP"),

        // MARK: - Shared/Wire: frames and protobuf
        .target(name: "RaveWire", path: "Shared/Wire/RaveWire"),
        .target(name: "RaveProtobuf", dependencies: ["CProtobufC"], path: "Shared/Wire/RaveProtobuf"),
        .target(
            name: "RaveDynamic", dependencies: ["CRaveProto", "CProtobufC", "RaveJSON"], path: "Shared/Wire/RaveDynamic"
        ),

        // MARK: - Shared/Generated: made from Proto/ by scripts/generate-proto.sh (committed, never edited)
        .target(name: "CRaveProto", dependencies: ["CProtobufC"], path: "Shared/Generated/CRaveProto"),
        .target(
            name: "RaveMessages",
            dependencies: ["RaveProtobuf", "CRaveProto", "CProtobufC"],
            path: "Shared/Generated/RaveMessages"
        ),

        // MARK: - Shared/RPC: connections, calls, servers, typed service APIs, the client library
        .target(
            name: "RaveRPC",
            dependencies: ["RaveWire", "RaveTransport", "RaveMessages", "RaveProtobuf", "RaveTelemetry"],
            path: "Shared/RPC/RaveRPC"
        ),
        .target(
            name: "RaveServices",
            dependencies: ["RaveRPC", "RaveMessages", "RaveProtobuf"],
            path: "Shared/RPC/RaveServices"
        ),
        // Who may call which method through the gateway, and the HTTP status of each code: read by the gateway and
        // by rave-protogen (for docs/openapi.json), so it depends on nothing.
        .target(name: "RaveGatewayRules", path: "Shared/RPC/RaveGatewayRules"),
        .target(
            name: "RaveClient", dependencies: ["RaveRPC", "RaveServices", "RaveMessages", "RaveTransport"],
            path: "Shared/RPC/RaveClient"),

        // MARK: - Shared/Data: PostgreSQL and the transactional outbox
        .target(
            name: "RavePostgres",
            dependencies: ["CLibPQ", "RaveCrypto", "RaveTransport", "CRaveSystem", "RaveTelemetry"],
            path: "Shared/Data/RavePostgres"
        ),
        .target(
            name: "RaveOutbox",
            dependencies: ["RavePostgres", "RaveTelemetry", "RaveTransport"],
            path: "Shared/Data/RaveOutbox"
        ),

        // MARK: - Shared/Runtime: the service process, events between services, merged ids
        .target(
            name: "RaveRuntime",
            dependencies: [
                "RaveRPC", "RaveServices", "RavePostgres", "RaveTransport", "RaveHTTP", "RaveTelemetry", "CRaveSystem",
                "RaveGatewayRules",
            ],
            path: "Shared/Runtime/RaveRuntime"
        ),
        .target(
            name: "RaveEvents",
            dependencies: [
                "RaveOutbox", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RavePostgres",
                "RaveTelemetry", "RaveTransport",
            ],
            path: "Shared/Runtime/RaveEvents"
        ),
        .target(
            name: "RaveMerges",
            dependencies: [
                "RaveMessages", "RavePostgres", "RaveRPC", "RaveRuntime", "RaveTelemetry", "RaveTransport", "RaveJSON",
            ],
            path: "Shared/Runtime/RaveMerges"
        ),

        // Helpers shared by the test targets (not shipped); Identity for the real identity other services' tests
        // start as their peer (OperatorScopeStack).
        .target(
            name: "RaveTestSupport",
            dependencies: [
                "RavePostgres", "RaveRPC", "RaveRuntime", "RaveServices", "RaveTelemetry", "RaveTransport",
                "RaveCrypto", "COpenSSL", "CRaveSystem", "RaveMerges", "Identity",
            ],
            path: "Tests/RaveTestSupport"),

        // MARK: - Tools: the code generator
        .executableTarget(name: "RaveProtoGen", dependencies: ["RaveGatewayRules"], path: "Tools/RaveProtoGen"),

        // MARK: - Services: each a library (its code, named after the service) and Main/, the executable
        .executableTarget(
            name: "Ravectl",
            dependencies: [
                "RaveRPC", "RaveServices", "RaveMessages", "RaveTransport", "RaveTelemetry", "RavePostgres",
                "RaveDynamic", "RaveProtobuf", "RaveCrypto",
            ],
            path: "Services/Ravectl"
        ),
        .target(
            name: "Identity",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents", "RaveCrypto", "RaveAuth", "RaveMail",
                "RaveDynamic", "RaveGatewayRules", "RaveJSON",
            ],
            path: "Services/Identity",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "IdentityExecutable", dependencies: ["Identity"], path: "Services/Identity/Main"),
        .target(
            name: "Wallet",
            dependencies: [
                "RaveMerges", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveCrypto",
            ],
            path: "Services/Wallet",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "WalletExecutable", dependencies: ["Wallet"], path: "Services/Wallet/Main"),

        .target(
            name: "Leaderboards",
            dependencies: [
                "RaveMerges", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents",
            ],
            path: "Services/Leaderboards",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(
            name: "LeaderboardsExecutable", dependencies: ["Leaderboards"], path: "Services/Leaderboards/Main"),

        .target(
            name: "Social",
            dependencies: [
                "RaveMerges", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveEvents",
            ],
            path: "Services/Social",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "SocialExecutable", dependencies: ["Social"], path: "Services/Social/Main"),

        .target(
            name: "Gateway",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RaveTelemetry",
                "RaveTransport", "RaveHTTP", "RaveAuth", "RaveDynamic", "RaveGatewayRules", "RaveJSON",
            ],
            path: "Services/Gateway",
            exclude: ["Main"]
        ),
        .executableTarget(name: "GatewayExecutable", dependencies: ["Gateway"], path: "Services/Gateway/Main"),

        .target(
            name: "Push",
            dependencies: [
                "RaveMerges", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveCrypto", "RaveHTTPClient", "RaveEvents", "RaveJSON",
            ],
            path: "Services/Push",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "PushExecutable", dependencies: ["Push"], path: "Services/Push/Main"),

        .target(
            name: "Gifts",
            dependencies: [
                "RaveMerges", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents",
            ],
            path: "Services/Gifts",
            exclude: ["Main"],
            resources: [.copy("Migrations")]
        ),
        .executableTarget(name: "GiftsExecutable", dependencies: ["Gifts"], path: "Services/Gifts/Main"),

        // MARK: - Benchmarks: `rave-bench <service>`, each service's benchmark in a module of its own, kept out of the
        // service executables (docs/BENCHMARKS.md)
        .target(name: "BenchmarkSupport", path: "Benchmarks/Support"),
        .target(
            name: "GatewayBenchmarks",
            dependencies: [
                "Gateway", "BenchmarkSupport", "RaveAuth", "RaveMessages", "RaveRPC", "RaveServices", "RaveTelemetry",
                "RaveTransport",
            ],
            path: "Benchmarks/Gateway"
        ),
        .target(
            name: "GiftsBenchmarks",
            dependencies: [
                "Gifts", "BenchmarkSupport", "RaveMessages", "RaveOutbox", "RavePostgres", "RaveRPC", "RaveTelemetry",
                "RaveTransport",
            ],
            path: "Benchmarks/Gifts"
        ),
        .target(
            name: "IdentityBenchmarks",
            dependencies: [
                "Identity", "BenchmarkSupport", "RaveCrypto", "RaveMessages", "RavePostgres", "RaveRPC",
                "RaveTelemetry", "RaveTransport",
            ],
            path: "Benchmarks/Identity"
        ),
        .target(
            name: "LeaderboardsBenchmarks", dependencies: ["Leaderboards", "RavePostgres", "RaveCrypto"],
            path: "Benchmarks/Leaderboards"),
        .target(
            name: "PushBenchmarks",
            dependencies: ["Push", "RaveMessages", "RavePostgres", "RaveRuntime", "RaveTelemetry", "RaveTransport"],
            path: "Benchmarks/Push"
        ),
        .target(
            name: "SocialBenchmarks",
            dependencies: [
                "Social", "BenchmarkSupport", "RaveMessages", "RavePostgres", "RaveRPC", "RaveTelemetry",
                "RaveTransport",
            ],
            path: "Benchmarks/Social"
        ),
        .target(
            name: "WalletBenchmarks",
            dependencies: [
                "Wallet", "BenchmarkSupport", "RaveMerges", "RaveMessages", "RavePostgres", "RaveRPC", "RaveTelemetry",
                "RaveTransport",
            ],
            path: "Benchmarks/Wallet"
        ),
        .executableTarget(
            name: "RaveBench",
            dependencies: [
                "GatewayBenchmarks", "GiftsBenchmarks", "IdentityBenchmarks", "LeaderboardsBenchmarks",
                "PushBenchmarks", "SocialBenchmarks", "WalletBenchmarks",
            ],
            path: "Benchmarks/Main"
        ),

        // MARK: - Tests
        .testTarget(
            name: "RaveClientTests",
            dependencies: ["RaveClient", "RaveRPC", "RaveServices", "RaveMessages", "RaveTransport"],
            path: "Tests/RaveClientTests"
        ),
        .testTarget(
            name: "RaveTransportTests",
            dependencies: ["RaveTransport", "CRaveSystem", "RaveTestSupport"],
            path: "Tests/RaveTransportTests"
        ),
        .testTarget(
            name: "RaveHTTPTests",
            dependencies: ["RaveHTTP", "RaveTransport", "RaveTestSupport"],
            path: "Tests/RaveHTTPTests"
        ),
        .testTarget(
            name: "RavePostgresTests",
            dependencies: ["RaveTestSupport", "RavePostgres", "RaveTransport", "RaveTelemetry"],
            path: "Tests/RavePostgresTests"
        ),
        .testTarget(
            name: "RaveOutboxTests",
            dependencies: ["RaveOutbox", "RavePostgres", "RaveTestSupport", "RaveTransport"],
            path: "Tests/RaveOutboxTests"
        ),
        .testTarget(
            name: "RaveEventsTests",
            dependencies: [
                "RaveEvents", "RaveOutbox", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveTestSupport",
            ],
            path: "Tests/RaveEventsTests"
        ),
        .testTarget(
            name: "RaveProtobufTests",
            dependencies: [
                "RaveProtobuf", "RaveMessages", "CRaveProto", "RaveServices", "RaveTelemetry", "RaveTestSupport",
            ],
            path: "Tests/RaveProtobufTests",
            exclude: ["crosscheck"]
        ),
        .testTarget(
            name: "RaveDynamicTests", dependencies: ["RaveDynamic", "RaveMessages", "RaveProtobuf"],
            path: "Tests/RaveDynamicTests"
        ),
        .testTarget(name: "RaveWireTests", dependencies: ["RaveWire", "RaveCrypto"], path: "Tests/RaveWireTests"),
        .testTarget(
            name: "RaveMergesTests",
            dependencies: [
                "RaveMerges", "RavePostgres", "RaveRPC", "RaveRuntime", "RaveTestSupport", "RaveTransport",
                "RaveTelemetry",
            ],
            path: "Tests/RaveMergesTests"
        ),
        .testTarget(
            name: "RaveRPCTests",
            dependencies: [
                "RaveRPC", "RaveServices", "RaveMessages", "RaveWire", "RaveTransport", "RaveTestSupport", "RaveCrypto",
            ],
            path: "Tests/RaveRPCTests"
        ),
        .testTarget(
            name: "RaveRuntimeTests",
            dependencies: [
                "RaveRuntime", "RaveTelemetry", "RaveTransport", "RaveRPC", "RavePostgres", "RaveMessages",
                "RaveProtobuf", "RaveTestSupport",
            ],
            path: "Tests/RaveRuntimeTests"
        ),
        .testTarget(
            name: "IdentityTests",
            dependencies: [
                "IdentityBenchmarks",
                "RaveTestSupport",
                "Identity", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents", "RaveCrypto", "RaveMail",
                "RaveGatewayRules",
            ],
            path: "Tests/IdentityTests"
        ),
        .testTarget(name: "RaveAuthTests", dependencies: ["RaveAuth"], path: "Tests/RaveAuthTests"),
        .testTarget(name: "RaveJSONTests", dependencies: ["RaveJSON"], path: "Tests/RaveJSONTests"),
        .testTarget(name: "RaveCryptoTests", dependencies: ["RaveCrypto"], path: "Tests/RaveCryptoTests"),
        .testTarget(
            name: "RaveMailTests", dependencies: ["RaveMail", "RaveTestSupport", "RaveTransport"],
            path: "Tests/RaveMailTests"),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "GatewayBenchmarks", "Identity",
                "Gateway", "RaveAuth", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveTelemetry",
                "RaveTransport", "RaveTestSupport", "RaveHTTP", "RavePostgres", "RaveGatewayRules", "RaveDynamic",
            ],
            path: "Tests/GatewayTests"
        ),
        .testTarget(
            name: "WalletTests",
            dependencies: [
                "RaveMerges", "Identity",
                "RaveTestSupport",
                "Wallet", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveCrypto",
            ],
            path: "Tests/WalletTests"
        ),
        .testTarget(
            name: "LeaderboardsTests",
            dependencies: [
                "LeaderboardsBenchmarks",
                "RaveMerges", "Identity",
                "RaveTestSupport",
                "Leaderboards", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf",
                "RavePostgres", "RaveTelemetry", "RaveTransport", "RaveEvents", "RaveCrypto",
            ],
            path: "Tests/LeaderboardsTests"
        ),
        .testTarget(
            name: "PushTests",
            dependencies: [
                "RaveMerges", "Identity",
                "Push", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTestSupport", "RaveTransport", "RaveEvents", "RaveHTTPClient",
            ],
            path: "Tests/PushTests",
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "SocialTests",
            dependencies: [
                "SocialBenchmarks",
                "RaveMerges",
                "Social", "Identity", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf",
                "RavePostgres", "RaveTelemetry", "RaveTransport", "RaveTestSupport",
            ],
            path: "Tests/SocialTests"
        ),
        .testTarget(
            name: "SystemTests",
            dependencies: [
                "RaveTestSupport",
                "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres", "RaveTransport", "RaveAuth",
                "RaveCrypto", "RaveWire",
            ],
            path: "Tests/SystemTests"
        ),
        .testTarget(
            name: "GiftsTests",
            dependencies: [
                "RaveMerges", "Identity",
                "Gifts", "RaveEvents", "RaveOutbox", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages",
                "RaveProtobuf", "RavePostgres", "RaveTelemetry", "RaveTransport", "RaveTestSupport",
            ],
            path: "Tests/GiftsTests"
        ),
    ]
)
