// swift-tools-version: 6.0
import PackageDescription

// Rave Backend: one executable per service, built from the shared modules below.
// Layering (lowest first): C targets → RaveCrypto/RaveHTTPClient/RaveProtobuf/RaveWire/RaveTransport
// → RaveMessages → RaveRPC → RaveServices → RavePostgres/RaveRuntime → Services. Services reach OpenSSL's
// crypto only through RaveCrypto and libcurl only through RaveHTTPClient.

let package = Package(
    name: "RaveBackend",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ravectl", targets: ["Ravectl"]),
        .library(name: "RaveClient", targets: ["RaveClient"]),
        .executable(name: "rave-protogen", targets: ["RaveProtoGen"]),
        .executable(name: "identity", targets: ["Identity"]),
        .executable(name: "leaderboards", targets: ["Leaderboards"]),
        .executable(name: "wallet", targets: ["Wallet"]),
        .executable(name: "gateway", targets: ["Gateway"]),
        .executable(name: "social", targets: ["Social"]),
        .executable(name: "push", targets: ["Push"]),
        .executable(name: "gifts", targets: ["Gifts"]),
    ],
    targets: [
        // MARK: - C libraries and shims
        .systemLibrary(name: "CProtobufC", path: "Shared/CProtobufC", pkgConfig: "libprotobuf-c"),
        .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq"),
        .target(name: "CRaveSystem", path: "Shared/CRaveSystem"),
        .systemLibrary(name: "CCurl", path: "Shared/CCurl", pkgConfig: "libcurl"),
        .target(name: "CRaveTLS", dependencies: ["COpenSSL"], path: "Shared/CRaveTLS"),
        .target(name: "CRaveProto", dependencies: ["CProtobufC"], path: "Shared/CRaveProto"),

        // MARK: - Shared Swift modules
        .target(name: "RaveCrypto", dependencies: ["COpenSSL"], path: "Shared/RaveCrypto"),
        .target(name: "RaveHTTPClient", dependencies: ["CCurl"], path: "Shared/RaveHTTPClient"),
        .target(name: "RaveProtobuf", dependencies: ["CProtobufC"], path: "Shared/RaveProtobuf"),
        .target(
            name: "RaveMessages",
            dependencies: ["RaveProtobuf", "CRaveProto", "CProtobufC"],
            path: "Shared/RaveMessages"
        ),
        .target(name: "RaveDynamic", dependencies: ["CRaveProto", "CProtobufC"], path: "Shared/RaveDynamic"),
        .target(name: "RaveTelemetry", path: "Shared/RaveTelemetry"),
        .target(name: "RaveWire", path: "Shared/RaveWire"),
        .target(
            name: "RaveTransport",
            dependencies: ["CRaveSystem", "CRaveTLS", "COpenSSL", "RaveTelemetry"],
            path: "Shared/RaveTransport"
        ),
        .target(
            name: "RaveRPC",
            dependencies: ["RaveWire", "RaveTransport", "RaveMessages", "RaveProtobuf", "RaveTelemetry"],
            path: "Shared/RaveRPC"
        ),
        .target(
            name: "RaveServices",
            dependencies: ["RaveRPC", "RaveMessages", "RaveProtobuf"],
            path: "Shared/RaveServices"
        ),
        .target(
            name: "RavePostgres",
            dependencies: ["CLibPQ", "RaveCrypto", "RaveTransport", "CRaveSystem", "RaveTelemetry"],
            path: "Shared/RavePostgres"
        ),
        .target(
            name: "RaveOutbox",
            dependencies: ["RavePostgres", "RaveTelemetry", "RaveTransport"],
            path: "Shared/RaveOutbox"
        ),
        .target(name: "RaveAuth", dependencies: ["RaveCrypto"], path: "Shared/RaveAuth"),
        .target(
            name: "RaveClient", dependencies: ["RaveRPC", "RaveServices", "RaveMessages", "RaveTransport"],
            path: "Shared/RaveClient"),
        .target(
            name: "RaveEvents",
            dependencies: [
                "RaveOutbox", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RavePostgres",
                "RaveTelemetry", "RaveTransport",
            ],
            path: "Shared/RaveEvents"
        ),
        .target(
            name: "RaveRuntime",
            dependencies: ["RaveRPC", "RaveServices", "RavePostgres", "RaveTransport", "RaveTelemetry", "CRaveSystem"],
            path: "Shared/RaveRuntime"
        ),

        // Helpers shared by the test targets (not shipped).
        .target(
            name: "RaveTestSupport",
            dependencies: ["RavePostgres", "RaveRPC", "RaveRuntime", "RaveTransport", "RaveCrypto"],
            path: "Tests/RaveTestSupport"),

        // MARK: - Executables
        .executableTarget(name: "RaveProtoGen", path: "Shared/RaveProtoGen"),
        .executableTarget(
            name: "Ravectl",
            dependencies: [
                "RaveRPC", "RaveServices", "RaveMessages", "RaveTransport", "RaveTelemetry", "RavePostgres",
                "RaveDynamic", "RaveProtobuf",
            ],
            path: "Services/Ravectl"
        ),
        .executableTarget(
            name: "Identity",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents", "RaveCrypto", "RaveAuth",
            ],
            path: "Services/Identity",
            resources: [.copy("Migrations")]
        ),
        .executableTarget(
            name: "Wallet",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveCrypto",
            ],
            path: "Services/Wallet",
            resources: [.copy("Migrations")]
        ),

        .executableTarget(
            name: "Leaderboards",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents",
            ],
            path: "Services/Leaderboards",
            resources: [.copy("Migrations")]
        ),

        .executableTarget(
            name: "Social",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveEvents",
            ],
            path: "Services/Social",
            resources: [.copy("Migrations")]
        ),

        .executableTarget(
            name: "Gateway",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RaveTelemetry",
                "RaveTransport", "RaveAuth", "RaveDynamic",
            ],
            path: "Services/Gateway"
        ),

        .executableTarget(
            name: "Push",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveCrypto", "RaveHTTPClient", "RaveEvents",
            ],
            path: "Services/Push",
            resources: [.copy("Migrations")]
        ),

        .executableTarget(
            name: "Gifts",
            dependencies: [
                "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents",
            ],
            path: "Services/Gifts",
            resources: [.copy("Migrations")]
        ),

        // MARK: - Tests
        .testTarget(
            name: "RaveClientTests",
            dependencies: ["RaveClient", "RaveRPC", "RaveServices", "RaveMessages", "RaveTransport"],
            path: "Tests/RaveClientTests"
        ),
        .testTarget(
            name: "RaveTransportTests",
            dependencies: ["RaveTransport", "CRaveSystem"],
            path: "Tests/RaveTransportTests"
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
            dependencies: ["RaveProtobuf", "RaveMessages", "CRaveProto", "RaveServices", "RaveTelemetry"],
            path: "Tests/RaveProtobufTests",
            exclude: ["crosscheck"]
        ),
        .testTarget(
            name: "RaveDynamicTests", dependencies: ["RaveDynamic", "RaveMessages", "RaveProtobuf"],
            path: "Tests/RaveDynamicTests"
        ),
        .testTarget(name: "RaveWireTests", dependencies: ["RaveWire"], path: "Tests/RaveWireTests"),
        .testTarget(
            name: "RaveRPCTests",
            dependencies: ["RaveRPC", "RaveServices", "RaveMessages", "RaveWire", "RaveTransport", "RaveTestSupport"],
            path: "Tests/RaveRPCTests"
        ),
        .testTarget(
            name: "RaveRuntimeTests",
            dependencies: [
                "RaveRuntime", "RaveTelemetry", "RaveTransport", "RaveRPC", "RavePostgres", "RaveMessages",
                "RaveProtobuf",
            ],
            path: "Tests/RaveRuntimeTests"
        ),
        .testTarget(
            name: "IdentityTests",
            dependencies: [
                "RaveTestSupport",
                "Identity", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveOutbox", "RaveEvents", "RaveCrypto",
            ],
            path: "Tests/IdentityTests"
        ),
        .testTarget(name: "RaveAuthTests", dependencies: ["RaveAuth"], path: "Tests/RaveAuthTests"),
        .testTarget(name: "RaveCryptoTests", dependencies: ["RaveCrypto"], path: "Tests/RaveCryptoTests"),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "Gateway", "RaveAuth", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveTelemetry",
                "RaveTransport", "RaveTestSupport",
            ],
            path: "Tests/GatewayTests"
        ),
        .testTarget(
            name: "WalletTests",
            dependencies: [
                "RaveTestSupport",
                "Wallet", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTransport", "RaveCrypto",
            ],
            path: "Tests/WalletTests"
        ),
        .testTarget(
            name: "LeaderboardsTests",
            dependencies: [
                "RaveTestSupport",
                "Leaderboards", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf",
                "RavePostgres", "RaveTelemetry", "RaveTransport", "RaveEvents",
            ],
            path: "Tests/LeaderboardsTests"
        ),
        .testTarget(
            name: "PushTests",
            dependencies: [
                "Push", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages", "RaveProtobuf", "RavePostgres",
                "RaveTelemetry", "RaveTestSupport", "RaveTransport", "RaveEvents", "RaveHTTPClient",
            ],
            path: "Tests/PushTests",
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "SocialTests",
            dependencies: [
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
                "Gifts", "RaveEvents", "RaveOutbox", "RaveRuntime", "RaveRPC", "RaveServices", "RaveMessages",
                "RaveProtobuf", "RavePostgres", "RaveTelemetry", "RaveTransport", "RaveTestSupport",
            ],
            path: "Tests/GiftsTests"
        ),
    ]
)
