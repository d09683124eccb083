import RaveMessages

/// The rich message both the Swift tests and crosscheck/crosscheck.py build; keep the two in sync.
enum SampleMessages {
    static let item = TestingV1.Container.Item(name: "sword", count: 3, color: .red)

    static let scalars = TestingV1.Scalars(
        doubleValue: -2.5, floatValue: 1.25, int32Value: -123_456, int64Value: -9_000_000_000,
        uint32Value: 4_000_000_000, uint64Value: 18_000_000_000_000_000_000, sint32Value: -42,
        sint64Value: -9_000_000_000_000, fixed32Value: 0xDEAD_BEEF, fixed64Value: 0x0123_4567_89AB_CDEF,
        sfixed32Value: -7, sfixed64Value: -8, boolValue: true, stringValue: "Grüße, 世界 🎮",
        bytesValue: [0, 1, 0, 255, 0])

    static let container = TestingV1.Container(
        scalars: scalars,
        item: item,
        items: [
            .init(name: "a", count: 1, color: .green), .init(), .init(name: "ü", count: -5, color: .deepBlue),
        ],
        numbers: [0, -1, .max, .min],
        names: ["", "x", "naïve"],
        blobs: [[], [0], [1, 2, 3]],
        ratios: [0.5, -1e300],
        flags: [true, false, true],
        colors: [.red, .deepBlue, .unspecified],
        color: .green,
        mode: .auto,
        status: .invalidArgument,
        target: .targetItem(.init(name: "t", count: 9, color: .red)),
        counters: ["a": 1, "b": -2, "ü": 3_000_000_000],
        itemsById: [7: .init(name: "seven", count: 7, color: .green), -1: .init()],
        labels: [0: "zero", .max: "max"],
        default: "kw",
        internal: true,
        class: 5,
        deltas: [-1, 1, .min],
        fixedValues: [1, .max],
        weights: [1.5, -0.25],
        bigNumbers: [.max, 0]
    )
}
