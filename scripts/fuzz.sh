#!/usr/bin/env bash
# `make fuzz`: libFuzzer with AddressSanitizer over the frame decoder, the protobuf-c message decoders and the HTTP/1.1
# request parser.
#
#   scripts/fuzz.sh                  build the fuzzers and run each for $RAVE_FUZZ_SECONDS (default 60)
#   scripts/fuzz.sh frame-decoder    run only the named fuzzers (frame-decoder, envelope, strings, http-parser)
#   scripts/fuzz.sh --build-only     build, don't run
#   scripts/fuzz.sh --seeds          rewrite the committed seed corpora in Fuzz/corpus from real messages
#
# SwiftPM can't link libFuzzer into an executable, so everything is compiled here with swiftc and clang:
# RaveWire's pure-Swift sources go into the frame fuzzer's own module, RaveHTTP's parser and message files (pure
# Swift, no imports) into the HTTP fuzzer's (its seeds, Fuzz/corpus/http, are written by hand); for the envelope
# and strings fuzzers (text fields: NULs encoded exactly, refused on decoding), the protoc-c C files, RaveProtobuf
# and RaveMessages are built as instrumented objects and linked with the entry point.
# Everything lands under .fuzz/ (git-ignored): bin/, build/, corpus/ (inputs found), crashes/, logs/.
# A crash leaves its input in .fuzz/crashes/<fuzzer>/; reproduce it with `.fuzz/bin/<fuzzer> <file>`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${RAVE_FUZZ_SECONDS:-60}
out=.fuzz
build=$out/build
sanitize=(-sanitize=fuzzer,address -parse-as-library -O -g)
includes=(-I "$build" -I Shared/System/CProtobufC -I Shared/Generated/CRaveProto/include)
mkdir -p "$out/bin" "$build" "$out/logs"

# Instrumented objects for the C message descriptors, RaveProtobuf and RaveMessages.
build_message_modules() {
    local source object
    rm -f "$build"/*.o
    while IFS= read -r source; do
        object=${source#Shared/Generated/CRaveProto/}
        object="$build/${object//\//_}.o"
        clang -c -O1 -g -fsanitize=fuzzer-no-link,address -I Shared/Generated/CRaveProto/include "$source" -o "$object"
    done < <(find Shared/Generated/CRaveProto/rave -name '*.pb-c.c' | sort)
    swiftc -c -wmo "${sanitize[@]}" -module-name RaveProtobuf -emit-module \
        -emit-module-path "$build/RaveProtobuf.swiftmodule" "${includes[@]}" \
        Shared/Wire/RaveProtobuf/*.swift -o "$build/RaveProtobuf.o"
    swiftc -c -wmo "${sanitize[@]}" -module-name RaveMessages -emit-module \
        -emit-module-path "$build/RaveMessages.swiftmodule" "${includes[@]}" \
        Shared/Generated/RaveMessages/*.swift -o "$build/RaveMessages.o"
}

build_all() {
    echo "fuzz: building (swiftc -sanitize=fuzzer,address)"
    swiftc "${sanitize[@]}" -use-ld=lld -module-name FuzzFrames \
        Fuzz/FrameDecoderFuzz.swift Fuzz/FuzzPieces.swift Shared/Wire/RaveWire/*.swift -o "$out/bin/frame-decoder"
    swiftc "${sanitize[@]}" -use-ld=lld -module-name FuzzHTTP Fuzz/HTTPParserFuzz.swift Fuzz/FuzzPieces.swift \
        Shared/Transport/RaveHTTP/HTTPMessage.swift Shared/Transport/RaveHTTP/HTTPRequestParser.swift \
        -o "$out/bin/http-parser"
    build_message_modules
    swiftc "${sanitize[@]}" -use-ld=lld -module-name FuzzEnvelopes "${includes[@]}" \
        Fuzz/EnvelopeFuzz.swift "$build"/*.o -lprotobuf-c -o "$out/bin/envelope"
    swiftc "${sanitize[@]}" -use-ld=lld -module-name FuzzStrings "${includes[@]}" \
        Fuzz/StringFieldsFuzz.swift "$build"/*.o -lprotobuf-c -o "$out/bin/strings"
}

# The seed writer links the same instrumented objects, so it needs only AddressSanitizer's runtime.
write_seeds() {
    build_message_modules
    swiftc -sanitize=address -O -use-ld=lld -module-name FuzzSeeds "${includes[@]}" \
        Fuzz/SeedCorpus.swift Shared/Wire/RaveWire/*.swift "$build"/*.o -lprotobuf-c -o "$out/bin/seed-corpus"
    mkdir -p Fuzz/corpus/frames Fuzz/corpus/envelopes Fuzz/corpus/strings
    "$out/bin/seed-corpus" Fuzz/corpus
    echo "fuzz: wrote $(find Fuzz/corpus -type f | wc -l) seed files under Fuzz/corpus"
}

# Runs one fuzzer for $seconds; new inputs go to .fuzz/corpus/<name>, the committed seeds stay untouched.
# -malloc_limit_mb fails any single allocation over 32 MiB, the decoders' "never allocate the declared size".
run_fuzzer() {
    local name=$1 seeds=$2
    mkdir -p "$out/corpus/$name" "$out/crashes/$name"
    echo "fuzz: $name for ${seconds}s (log: $out/logs/$name.log)"
    if "$out/bin/$name" "$out/corpus/$name" "$seeds" -max_total_time="$seconds" -max_len=4096 \
        -malloc_limit_mb=32 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/crashes/$name/" >"$out/logs/$name.log" 2>&1; then
        grep -E '^stat::number_of_executed_units|^Done' "$out/logs/$name.log" | sed "s/^/fuzz: $name: /"
        return 0
    fi
    echo "fuzz: $name FAILED; the tail of its log:" >&2
    tail -n 40 "$out/logs/$name.log" >&2
    return 1
}

fuzzers=()
build_only=false
for argument in "$@"; do
    case $argument in
    --seeds) write_seeds; exit 0 ;;
    --build-only) build_only=true ;;
    frame-decoder | envelope | strings | http-parser) fuzzers+=("$argument") ;;
    *)
        echo "usage: scripts/fuzz.sh [--build-only | --seeds] [frame-decoder] [envelope] [strings] [http-parser]" >&2
        exit 2
        ;;
    esac
done
[[ ${#fuzzers[@]} -gt 0 ]] || fuzzers=(frame-decoder envelope strings http-parser)

build_all
$build_only && exit 0

failed=()
for name in "${fuzzers[@]}"; do
    case $name in
    frame-decoder) run_fuzzer frame-decoder Fuzz/corpus/frames || failed+=("$name") ;;
    envelope) run_fuzzer envelope Fuzz/corpus/envelopes || failed+=("$name") ;;
    strings) run_fuzzer strings Fuzz/corpus/strings || failed+=("$name") ;;
    http-parser) run_fuzzer http-parser Fuzz/corpus/http || failed+=("$name") ;;
    esac
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "fuzz: crashes in: ${failed[*]} (inputs under $out/crashes/)" >&2
    exit 1
fi
echo "fuzz: no crashes"
