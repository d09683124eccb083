import Foundation
import RaveTestSupport
import Testing

/// The child processes tests start: exit statuses, signals, pipes, the environment and the descriptors a child gets.
@Suite("Child processes", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test func exitStatusesAndSignalsAreReported() async throws {
        #expect(try ChildProcess.start("/bin/sh", ["-c", "exit 3"]).wait() == .exited(3))
        let sleeper = try ChildProcess.start("/bin/sleep", ["30"])
        #expect(sleeper.isRunning)
        sleeper.signal(SIGTERM)
        #expect(try await sleeper.wait(within: .seconds(10)) == .signalled(SIGTERM))
        #expect(sleeper.ended?.status == 128 + SIGTERM)
        // Once reaped, a signal goes nowhere (the id may belong to another process by now).
        sleeper.signal(SIGKILL)
        #expect(sleeper.wait() == .signalled(SIGTERM))
    }

    @Test func bothPipesAreDrainedTogetherSoAChattyChildNeverBlocks() throws {
        // 1 MiB to each stream, errors first: a reader of standard output alone would wait forever.
        let child = try ChildProcess.start(
            "/bin/sh", ["-c", "head -c 1048576 /dev/zero >&2; head -c 1048576 /dev/zero"], output: .pipe,
            errors: .pipe)
        let (output, errors) = child.collectOutput()
        #expect(child.wait() == .exited(0))
        #expect(output.count == 1_048_576 && errors.count == 1_048_576)
    }

    @Test func standardInputIsWrittenAndClosed() throws {
        let child = try ChildProcess.start("/bin/cat", input: .pipe, output: .pipe)
        try child.write(Array("first line\nsecond".utf8))
        #expect(child.readLine() == "first line\n")
        child.closeInput()
        #expect(String(decoding: child.collectOutput().output, as: UTF8.self) == "second")
        #expect(child.wait() == .exited(0))
        #expect(throws: ChildProcessError.self) { try child.write([1]) }
    }

    @Test func theChildGetsExactlyItsEnvironmentDirectoryAndDescriptors() throws {
        let directory = NSTemporaryDirectory() + "rave-child-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A descriptor of this process without close-on-exec must not reach the child.
        let leaked = open("/dev/null", O_RDONLY)
        defer { close(leaked) }
        let logPath = directory + "/out.log"
        let child = try ChildProcess.start(
            "/bin/sh", ["-c", "pwd; echo \"$ONLY\"; env | wc -l; ls /proc/self/fd; echo oops >&2"],
            environment: ["ONLY": "this"], directory: directory, output: .file(logPath), errors: .standardOutput)
        #expect(child.wait() == .exited(0))
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map(String.init)
        // pwd, $ONLY, the variable count (sh adds PWD and may add a few of its own), then ls's descriptors
        // (0, 1, 2 and the one ls opened to list the directory), then standard error in the same file.
        #expect(lines.first == directory)
        #expect(lines.dropFirst().first == "this")
        #expect((Int(lines[2].trimmingCharacters(in: .whitespaces)) ?? 99) <= 4)
        let descriptors = lines.dropFirst(3).dropLast().compactMap { Int($0) }
        #expect(descriptors.count == lines.count - 4, "\(lines)")
        #expect(!descriptors.contains(Int(leaked)), "\(lines)")
        #expect(descriptors.filter { $0 > 2 }.count == 1, "\(lines)")
        #expect(lines.last == "oops")
    }

    @Test func aMissingExecutableThrows() {
        #expect(throws: ChildProcessError.self) { try ChildProcess.start("/nonexistent/program") }
    }
}
