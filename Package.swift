// swift-tools-version: 6.0
import PackageDescription

// Rave Backend: one executable per service, built from the shared modules below.
// Layering (lowest first): C targets → RaveProtobuf/RaveWire/RaveTransport → RaveMessages
// → RaveRPC → RaveServices → RavePostgres/RaveRuntime → Services.

let package = Package(
    name: "RaveBackend",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "ravectl", targets: ["Ravectl"]),
        .executable(name: "rave-protogen", targets: ["RaveProtoGen"]),
    ],
    targets: [
        // MARK: - C libraries and shims
        .systemLibrary(name: "CProtobufC", path: "Shared/CProtobufC", pkgConfig: "libprotobuf-c"),
        .systemLibrary(name: "COpenSSL", path: "Shared/COpenSSL", pkgConfig: "openssl"),
        .systemLibrary(name: "CLibPQ", path: "Shared/CLibPQ", pkgConfig: "libpq"),
        .target(name: "CRaveSystem", path: "Shared/CRaveSystem"),
        .target(name: "CRaveTLS", dependencies: ["COpenSSL"], path: "Shared/CRaveTLS"),
        .target(name: "CRaveProto", dependencies: ["CProtobufC"], path: "Shared/CRaveProto"),

        // MARK: - Shared Swift modules
        .target(name: "RaveProtobuf", dependencies: ["CProtobufC"], path: "Shared/RaveProtobuf"),
        .target(
            name: "RaveMessages",
            dependencies: ["RaveProtobuf", "CRaveProto", "CProtobufC"],
            path: "Shared/RaveMessages"
        ),
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
            dependencies: ["CLibPQ", "COpenSSL", "RaveTransport", "CRaveSystem", "RaveTelemetry"],
            path: "Shared/RavePostgres"
        ),
        .target(
            name: "RaveRuntime",
            dependencies: ["RaveRPC", "RaveServices", "RavePostgres", "RaveTransport", "RaveTelemetry", "CRaveSystem"],
            path: "Shared/RaveRuntime"
        ),

        // MARK: - Executables
        .executableTarget(name: "RaveProtoGen", path: "Shared/RaveProtoGen"),
        .executableTarget(
            name: "Ravectl",
            dependencies: [
                "RaveRPC", "RaveServices", "RaveMessages", "RaveTransport", "RaveTelemetry",
            ],
            path: "Services/Ravectl"
        ),

        // MARK: - Tests
        .testTarget(
            name: "RaveTransportTests",
            dependencies: ["RaveTransport", "CRaveSystem"],
            path: "Tests/RaveTransportTests"
        ),
        .testTarget(
            name: "RavePostgresTests",
            dependencies: ["RavePostgres", "RaveTransport", "RaveTelemetry"],
            path: "Tests/RavePostgresTests"
        ),
        .testTarget(
            name: "RaveProtobufTests",
            dependencies: ["RaveProtobuf", "RaveMessages", "CRaveProto", "RaveServices", "RaveTelemetry"],
            path: "Tests/RaveProtobufTests",
            exclude: ["crosscheck"]
        ),
        .testTarget(name: "RaveWireTests", dependencies: ["RaveWire"], path: "Tests/RaveWireTests"),
        .testTarget(
            name: "RaveRPCTests",
            dependencies: ["RaveRPC", "RaveServices", "RaveMessages", "RaveWire", "RaveTransport"],
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
    ]
)
