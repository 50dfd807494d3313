#!/usr/bin/env bash
# Speed of strata-wml against a bare C loop making the same system calls
# (bare.c), on tmpfs, with each personality's own thread count.
# Prints: personality engine_ops/s bare_ops/s ratio cpu_ratio (see compare.py),
# then the cost of one hog iteration, engine against Filebench's C loop (hog.c).
# Usage: bench/wml/run.sh [SECONDS] [REPS] | --tiny   (default 10 s, 3 repetitions;
# needs root for the mount). The machine is noisy: engine and bare loop runs
# alternate, and the medians of REPS runs are compared.
set -euo pipefail
if [ "${1:-}" = "--tiny" ] || [ "${STRATA_BENCH_TINY:-}" = 1 ]; then
    echo "tiny mode (1 s runs, 1 repetition): the figures below mean nothing"
    set -- 1 1
fi
secs=${1:-10}
reps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
engine_dir="$here/../../engine"
pers="$here/../../src/strata/workloads/personalities"
work=$(mktemp -d /tmp/strata-wml-bench.XXXXXX)
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=8g tmpfs "$mnt"

(cd "$engine_dir/.." && . scripts/cargo-env && cargo build --release --quiet --manifest-path engine/Cargo.toml)
engine="$engine_dir/target/release/strata-wml"
gcc -O2 -pthread -o "$work/bare" "$here/bare.c"
gcc -O2 -o "$work/hog" "$here/hog.c"

python3 "$here/compare.py" "$engine" "$work/bare" "$pers" "$mnt" "$work" "$secs" "$reps"
