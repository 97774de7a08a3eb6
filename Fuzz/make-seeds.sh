#!/usr/bin/env bash
# Regenerates Fuzz/Corpus/* from real stores written by the engine (see Sources/MakeSeeds/main.swift).
# Built without sanitizers in a separate scratch directory so it does not disturb the fuzzer build.
set -euo pipefail
FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SCRATCH="${SCRATCH_BUILD:-/tmp/lucid-fuzz-plain}"
nice -n 10 swift build --package-path "$FUZZ_DIR" --scratch-path "$SCRATCH" --product MakeSeeds
"$SCRATCH/debug/MakeSeeds" "$FUZZ_DIR/Corpus"
