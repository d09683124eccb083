#!/usr/bin/python3
"""Cross-checks rave-protogen's encoding against Google's Python protobuf implementation.

    crosscheck.py REPO_ROOT SWIFT_ENCODING_FILE PYTHON_ENCODING_FILE

Decodes the Swift encoding of rave.testing.v1.Container, compares it with the message built below
(the same values as Tests/RaveProtobufTests/SampleMessages.swift), and writes Python's own encoding of
that message for the Swift side to decode. Exits non-zero, naming the difference, on any mismatch.
"""
import importlib
import os
import subprocess
import sys
import tempfile


def load_sample_module(repo_root, out_dir):
    proto_dir = os.path.join(repo_root, "Proto")
    protos = ["rave/testing/v1/sample.proto", "rave/rpc/v1/status.proto"]
    subprocess.run(["protoc", "--proto_path=" + proto_dir, "--python_out=" + out_dir] + protos, check=True)
    sys.path.insert(0, out_dir)
    return importlib.import_module("rave.testing.v1.sample_pb2")


def expected_container(pb):
    c = pb.Container()
    s = c.scalars
    s.double_value = -2.5
    s.float_value = 1.25
    s.int32_value = -123456
    s.int64_value = -9_000_000_000
    s.uint32_value = 4_000_000_000
    s.uint64_value = 18_000_000_000_000_000_000
    s.sint32_value = -42
    s.sint64_value = -9_000_000_000_000
    s.fixed32_value = 0xDEADBEEF
    s.fixed64_value = 0x0123456789ABCDEF
    s.sfixed32_value = -7
    s.sfixed64_value = -8
    s.bool_value = True
    s.string_value = "Grüße, 世界 🎮"
    s.bytes_value = bytes([0, 1, 0, 255, 0])
    c.item.CopyFrom(pb.Container.Item(name="sword", count=3, color=pb.COLOR_RED))
    c.items.add(name="a", count=1, color=pb.COLOR_GREEN)
    c.items.add()
    c.items.add(name="ü", count=-5, color=pb.COLOR_DEEP_BLUE)
    c.numbers.extend([0, -1, 2**31 - 1, -(2**31)])
    c.names.extend(["", "x", "naïve"])
    c.blobs.extend([b"", b"\x00", b"\x01\x02\x03"])
    c.ratios.extend([0.5, -1e300])
    c.flags.extend([True, False, True])
    c.colors.extend([pb.COLOR_RED, pb.COLOR_DEEP_BLUE, pb.COLOR_UNSPECIFIED])
    c.color = pb.COLOR_GREEN
    c.mode = pb.Container.AUTO
    c.status = 3  # INVALID_ARGUMENT
    c.target_item.CopyFrom(pb.Container.Item(name="t", count=9, color=pb.COLOR_RED))
    c.counters["a"] = 1
    c.counters["b"] = -2
    c.counters["ü"] = 3_000_000_000
    c.items_by_id[7].CopyFrom(pb.Container.Item(name="seven", count=7, color=pb.COLOR_GREEN))
    c.items_by_id[-1].CopyFrom(pb.Container.Item())
    c.labels[0] = "zero"
    c.labels[2**64 - 1] = "max"
    setattr(c, "default", "kw")
    setattr(c, "internal", True)
    setattr(c, "class", 5)
    c.deltas.extend([-1, 1, -(2**63)])
    c.fixed_values.extend([1, 2**32 - 1])
    c.weights.extend([1.5, -0.25])
    c.big_numbers.extend([2**64 - 1, 0])
    return c


def main():
    repo_root, swift_file, python_file = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as out_dir:
        pb = load_sample_module(repo_root, out_dir)
        expected = expected_container(pb)
        with open(swift_file, "rb") as f:
            decoded = pb.Container.FromString(f.read())
        if decoded != expected:
            for field, value in expected.ListFields():
                if getattr(decoded, field.name) != value:
                    print(f"field {field.name}: decoded {getattr(decoded, field.name)!r}, expected {value!r}")
            print("Swift's encoding does not decode to the expected Container", file=sys.stderr)
            return 1
        with open(python_file, "wb") as f:
            f.write(expected.SerializeToString(deterministic=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
