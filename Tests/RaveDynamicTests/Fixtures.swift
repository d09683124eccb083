import RaveDynamic
import RaveMessages

/// Sample messages with every field kind set, shared by the suites.
enum Fixtures {
    static let registry = DescriptorRegistry.shared

    static var scalars: TestingV1.Scalars {
        var scalars = TestingV1.Scalars()
        scalars.doubleValue = 2.5
        scalars.floatValue = -1.25
        scalars.int32Value = -42
        scalars.int64Value = Int64.min
        scalars.uint32Value = UInt32.max
        scalars.uint64Value = UInt64.max
        scalars.sint32Value = -7
        scalars.sint64Value = -9_007_199_254_740_993
        scalars.fixed32Value = 123_456
        scalars.fixed64Value = 1 << 60
        scalars.sfixed32Value = -3
        scalars.sfixed64Value = -(1 << 40)
        scalars.boolValue = true
        scalars.stringValue = "héllo \"world\"\n"
        scalars.bytesValue = [0, 1, 2, 250, 255]
        return scalars
    }

    static var container: TestingV1.Container {
        var container = TestingV1.Container()
        container.scalars = scalars
        container.item = TestingV1.Container.Item(name: "sword", count: 3, color: .red)
        container.items = [
            TestingV1.Container.Item(name: "a", count: 1, color: .green),
            TestingV1.Container.Item(name: "b", count: -2, color: .deepBlue),
        ]
        container.numbers = [1, -1, 300, Int32.min]
        container.names = ["x", "", "z"]
        container.blobs = [[1, 2], []]
        container.ratios = [0.5, -3]
        container.flags = [true, false, true]
        container.colors = [.red, .deepBlue]
        container.color = .green
        container.mode = .auto
        container.status = .notFound
        container.target = .score(0)
        container.counters = ["wins": 5, "losses": -1]
        container.itemsById = [7: TestingV1.Container.Item(name: "seven", count: 7, color: .red)]
        container.labels = [UInt64.max: "max", 1: "one"]
        container.default = "keyword"
        container.internal = true
        container.class = 9
        container.deltas = [-5, 5]
        container.fixedValues = [1, UInt32.max]
        container.weights = [0.25]
        container.bigNumbers = [UInt64.max, 0]
        return container
    }

    static func schema(_ name: String) throws -> MessageSchema { try registry.message(name) }
}
