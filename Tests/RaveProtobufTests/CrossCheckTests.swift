import Foundation
import RaveMessages
import Testing

/// Compares our protobuf-c based encoding with Google's Python implementation (python3-protobuf).
@Suite struct CrossCheckTests {
    /// The checkout's root, found from this file's path (Tests/RaveProtobufTests/CrossCheckTests.swift).
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    @Test func pythonDecodesOurEncodingAndWeDecodeItsEncoding() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("rave-crosscheck-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ours = directory.appendingPathComponent("swift.bin")
        let theirs = directory.appendingPathComponent("python.bin")
        try Data(SampleMessages.container.protobufBytes()).write(to: ours)

        let script = Self.repositoryRoot.appendingPathComponent("Tests/RaveProtobufTests/crosscheck/crosscheck.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, Self.repositoryRoot.path, ours.path, theirs.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "crosscheck.py failed: \(report)")
        guard process.terminationStatus == 0 else { return }

        let decoded = try TestingV1.Container(protobufBytes: [UInt8](Data(contentsOf: theirs)))
        #expect(decoded == SampleMessages.container)
    }
}
