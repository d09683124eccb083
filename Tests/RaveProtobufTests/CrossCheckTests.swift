import Foundation
import RaveMessages
import RaveTestSupport
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
        let process = try ChildProcess.start(
            "/usr/bin/python3", [script.path, Self.repositoryRoot.path, ours.path, theirs.path], output: .pipe,
            errors: .standardOutput)
        let report = String(decoding: process.collectOutput().output, as: UTF8.self)
        let ended = process.wait()
        #expect(ended == .exited(0), "crosscheck.py failed (\(ended)): \(report)")
        guard ended == .exited(0) else { return }

        let decoded = try TestingV1.Container(protobufBytes: [UInt8](Data(contentsOf: theirs)))
        #expect(decoded == SampleMessages.container)
    }
}
