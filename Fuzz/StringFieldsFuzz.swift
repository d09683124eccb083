// libFuzzer entry point for text in protobuf-c messages; scripts/fuzz.sh links it with RaveProtobuf, RaveMessages
// and the CRaveProto C code, all built with the same sanitizers.
import RaveMessages
import RaveProtobuf

/// One fuzz input, read two ways.
///
/// As wire bytes: whatever decodes as a `Container` holds no NUL in any string. As text: the input, cut at 0x1E
/// bytes into pieces (invalid UTF-8 repaired, NULs kept), fills the container's string fields at every depth;
/// encoding must write each string exactly (the same bytes as with U+0001 in place of every NUL, but for
/// those characters), and decoding must refuse the message if and only if a string holds a NUL.
@_cdecl("LLVMFuzzerTestOneInput")
public func stringFieldsFuzzTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if let decoded = try? TestingV1.Container(protobufBytes: bytes) {
        precondition(!strings(of: decoded).contains { $0.utf8.contains(0) }, "a decoded string holds a NUL")
    }

    let pieces = UnsafeBufferPointer(start: data, count: size).split(separator: 0x1E, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    let message = container(from: pieces)
    let nulCount = strings(of: message).reduce(0) { $0 + $1.utf8.filter { $0 == 0 }.count }
    let encoded = message.protobufBytes()
    let marked = container(from: pieces.map { String($0.map { $0 == "\u{0}" ? "\u{1}" : $0 }) }).protobufBytes()
    precondition(encoded.count == marked.count, "a string's encoded length depends on its NULs")
    var differences = 0
    for (byte, markedByte) in zip(encoded, marked) where byte != markedByte {
        precondition(byte == 0 && markedByte == 1, "the encoding differs other than where the NULs are")
        differences += 1
    }
    precondition(differences == nulCount, "\(nulCount) NULs, but \(differences) NUL bytes encoded")
    do {
        let decoded = try TestingV1.Container(protobufBytes: encoded)
        precondition(nulCount == 0, "a message with \(nulCount) NULs decoded")
        precondition(decoded == message, "a message without NULs changed in a round trip")
    } catch {
        precondition(nulCount > 0, "a message without NULs was refused: \(error)")
        precondition(error.reason.contains("holds a NUL character"), "refused for another reason: \(error)")
    }
    return 0
}

/// A container whose string fields at every depth take the pieces in turn (fixed map keys, so replacing NULs
/// cannot make two keys equal).
private func container(from pieces: [String]) -> TestingV1.Container {
    var next = pieces.makeIterator()
    func piece() -> String { next.next() ?? "" }
    var container = TestingV1.Container()
    container.scalars = TestingV1.Scalars(stringValue: piece())
    container.item = TestingV1.Container.Item(name: piece(), count: 1)
    container.items = [TestingV1.Container.Item(name: piece()), TestingV1.Container.Item(name: piece())]
    container.names = [piece(), piece(), piece()]
    container.target = .targetItem(TestingV1.Container.Item(name: piece()))
    container.itemsById = [2: TestingV1.Container.Item(name: piece())]
    container.labels = [3: piece(), 4: piece()]
    container.default = piece()
    let rest = Array(next)
    if !rest.isEmpty { container.names += rest }
    return container
}

/// Every string in a container, at every depth.
private func strings(of container: TestingV1.Container) -> [String] {
    var strings = [container.scalars?.stringValue ?? "", container.item?.name ?? "", container.default]
    strings += container.items.map(\.name) + container.names + container.counters.keys + container.labels.values
    strings += container.itemsById.values.map(\.name)
    switch container.target {
    case .userId(let text)?: strings.append(text)
    case .targetItem(let item)?: strings.append(item.name)
    default: break
    }
    return strings
}
