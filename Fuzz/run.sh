#!/usr/bin/env bash
# Builds and runs the LucidEngine libFuzzer targets.
#
#   Fuzz/run.sh TARGET [SECONDS]   build TARGET (FuzzPage, FuzzManifest, FuzzCheckpoint, FuzzRecovery, FuzzOperations,
#                                  FuzzEntityCodec, FuzzQuery) with
#                                  -sanitize=fuzzer,address and fuzz it for SECONDS (default 60) on
#                                  Fuzz/Corpus/TARGET plus a scratch corpus under /tmp (new inputs land there;
#                                  copy good ones into Corpus/ by hand, keep it small)
#   Fuzz/run.sh all [SECONDS]      each target in turn
#   Fuzz/run.sh replay             run every file of Fuzz/FailCases/*/ and Fuzz/Corpus/*/ through its target once
#   Fuzz/run.sh build              build every target only
#
# A crash or broken invariant is written to Fuzz/FailCases/TARGET/crash-<sha1> (and the run fails). The same inputs
# are replayed without sanitizers by `swift test --filter FailCasesReplayTests` in the root package.
# Environment: JOBS (parallel fuzzing jobs, default 1), EXTRA_ARGS (more libFuzzer flags), SCRATCH (scratch corpus root).
set -euo pipefail

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$FUZZ_DIR")"
TARGETS=(FuzzPage FuzzManifest FuzzCheckpoint FuzzRecovery FuzzOperations FuzzEntityCodec FuzzQuery)
SCRATCH="${SCRATCH:-/tmp/lucid-fuzz-corpus}"
export SWIFT_BACKTRACE=enable=no   # the Swift backtracer confuses ASan after a fatalError
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1}"

# Per-target libFuzzer options. -malloc_limit_mb makes any single allocation above the limit a failure: the largest
# legitimate one is a page's decompressed payload (maxRawPageLength = 8 MiB) or a 1 MiB fixture value.
target_args() {
    case "$1" in
        FuzzPage) echo "-max_len=20000 -malloc_limit_mb=64 -rss_limit_mb=2048 -timeout=10" ;;
        FuzzManifest) echo "-max_len=4096 -malloc_limit_mb=64 -rss_limit_mb=2048 -timeout=10" ;;
        FuzzCheckpoint) echo "-max_len=8192 -malloc_limit_mb=64 -rss_limit_mb=2048 -timeout=20" ;;
        FuzzRecovery) echo "-max_len=64 -len_control=0 -malloc_limit_mb=64 -rss_limit_mb=4096 -timeout=30" ;;
        FuzzOperations) echo "-max_len=256 -len_control=0 -malloc_limit_mb=64 -rss_limit_mb=4096 -timeout=60" ;;
        FuzzEntityCodec) echo "-max_len=4096 -malloc_limit_mb=64 -rss_limit_mb=2048 -timeout=10" ;;
        FuzzQuery) echo "-max_len=512 -len_control=0 -malloc_limit_mb=64 -rss_limit_mb=4096 -timeout=30" ;;
    esac
}

# Note the -Xswiftc: swiftc honours only the LAST -sanitize= flag, so SwiftPM's `--sanitize fuzzer --sanitize address`
# alone yields Swift code with ASan but WITHOUT coverage instrumentation (libFuzzer then only sees the C code and
# fuzzes blind). The combined flag comes last and restores both; --sanitize still covers the C targets and the link.
build() {
    local started=$SECONDS status
    # SwiftPM keeps the root package's source list from its last plan of this nested package: a file added to
    # ../Sources since then is left out of the build ("cannot find X in scope") until the plan is redone, which a
    # newer manifest forces (a second or two).
    touch "$FUZZ_DIR/Package.swift"
    set +o pipefail
    nice -n 10 swift build --package-path "$FUZZ_DIR" -c debug --sanitize fuzzer --sanitize address \
        -Xswiftc -sanitize=fuzzer,address --product "$1" 2>&1 \
        | grep -Ev "Cannot export local symbol|^\[[0-9]+/[0-9]+\] (Compiling|Write|Emitting|Wrapping)"
    status=${PIPESTATUS[0]}
    set -o pipefail
    [[ $status -eq 0 ]] || { echo "build of $1 failed" >&2; exit 1; }
    echo "built $1 in $((SECONDS - started)) s"
}

bin() { echo "$FUZZ_DIR/.build/debug/$1"; }

check_target() {
    local t
    for t in "${TARGETS[@]}"; do [[ "$t" == "$1" ]] && return 0; done
    echo "unknown target $1 (one of: ${TARGETS[*]})" >&2
    exit 2
}

run() {
    local target=$1 seconds=$2
    build "$target"
    mkdir -p "$SCRATCH/$target" "$FUZZ_DIR/FailCases/$target" "$FUZZ_DIR/Corpus/$target"
    echo "fuzzing $target for $seconds s"
    # shellcheck disable=SC2046
    "$(bin "$target")" $(target_args "$target") -max_total_time="$seconds" -print_final_stats=1 \
        ${JOBS:+-jobs=$JOBS -workers=$JOBS} \
        -artifact_prefix="$FUZZ_DIR/FailCases/$target/" ${EXTRA_ARGS:-} \
        "$SCRATCH/$target" "$FUZZ_DIR/Corpus/$target"
}

replay() {
    local target status=0 files known name
    known=$(grep -v '^#' "$FUZZ_DIR/FailCases/KNOWN-ISSUES" 2>/dev/null | awk '{print $1}' || true)
    for target in "${TARGETS[@]}"; do
        files=$(find "$FUZZ_DIR/FailCases/$target" "$FUZZ_DIR/Corpus/$target" -type f ! -name '.*' 2>/dev/null | sort)
        [[ -z "$files" ]] && { echo "$target: nothing to replay"; continue; }
        build "$target"
        local regular=() expected=()
        for f in $files; do
            name="$target/$(basename "$f")"
            if grep -qxF "$name" <<<"$known" && [[ "$f" == */FailCases/* ]]; then expected+=("$f"); else regular+=("$f"); fi
        done
        echo "$target: replaying ${#regular[@]} inputs"
        # shellcheck disable=SC2046
        "$(bin "$target")" $(target_args "$target") "${regular[@]}" >/dev/null 2>"/tmp/lucid-replay-$target.log" \
            || { status=1; echo "$target: FAILED (see /tmp/lucid-replay-$target.log)"; tail -20 "/tmp/lucid-replay-$target.log"; }
        for f in "${expected[@]}"; do
            # shellcheck disable=SC2046
            if "$(bin "$target")" $(target_args "$target") "$f" >/dev/null 2>&1; then
                echo "$target: $(basename "$f") listed in KNOWN-ISSUES now PASSES: remove its line"; status=1
            else
                echo "$target: $(basename "$f") still fails (known issue)"
            fi
        done
    done
    return $status
}

case "${1:-}" in
    all)
        started=$SECONDS
        failed=()
        for t in "${TARGETS[@]}"; do run "$t" "${2:-60}" || failed+=("$t"); done
        echo "run.sh all ${2:-60} took $((SECONDS - started)) s"
        [[ ${#failed[@]} -eq 0 ]] || { echo "FAILED: ${failed[*]} (inputs in Fuzz/FailCases/)"; exit 1; }
        ;;
    replay) replay ;;
    build) for t in "${TARGETS[@]}"; do build "$t"; done ;;
    "" | -h | --help) sed -n '2,15p' "$0"; exit 2 ;;
    *) check_target "$1"; run "$1" "${2:-60}" ;;
esac
