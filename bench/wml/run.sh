#!/usr/bin/env bash
# Speed of strata-wml against a bare C loop making the same system calls
# (bare.c), on tmpfs, with each personality's own thread count.
# Prints: personality engine_ops/s bare_ops/s ratio
# Usage: bench/wml/run.sh [SECONDS] [REPS]   (default 10 s, 3 repetitions;
# needs root for the mount). The machine is noisy: engine and bare loop runs
# alternate, and the medians of REPS runs are compared.
set -euo pipefail
secs=${1:-10}
reps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
engine_dir="$here/../../engine"
pers="$engine_dir/tests/data/filebench/personalities"
work=$(mktemp -d /tmp/strata-wml-bench.XXXXXX)
mnt="$work/mnt"
mkdir -p "$mnt"
cleanup() {
    mountpoint -q "$mnt" && umount "$mnt"
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mount -t tmpfs -o size=8g tmpfs "$mnt"

(cd "$engine_dir" && cargo build --release --quiet)
engine="$engine_dir/target/release/strata-wml"
gcc -O2 -pthread -o "$work/bare" "$here/bare.c"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

engine_once() {
    # exit 1 = stopped early (e.g. varmail's pool of free files ran dry,
    # as in Filebench): the ops/s of the time it ran still count.
    { "$engine" run "$1" --json --runtime "$secs" --set "\$dir=$mnt" 2>/dev/null || true; } |
        python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e["type"] == "end": print(round(e["data"]["summary"]["ops_per_s"]))'
    rm -rf "${mnt:?}"/*
}

bare_once() {
    "$engine" create "$1" --set "\$dir=$mnt" > "$work/listing.tsv" 2>/dev/null
    "$work/bare" "$2" "$work/listing.tsv" "$3" "$secs"
    rm -rf "${mnt:?}"/*
}

echo "personality engine_ops/s bare_ops/s ratio"
for p in webserver:100 varmail:16 fileserver:50; do
    name=${p%%:*}
    threads=${p##*:}
    f="$pers/$name.f"
    : > "$work/eng"
    : > "$work/bare.txt"
    for _ in $(seq "$reps"); do
        engine_once "$f" >> "$work/eng"
        bare_once "$f" "$name" "$threads" >> "$work/bare.txt"
    done
    eng=$(median < "$work/eng")
    bare=$(median < "$work/bare.txt")
    ratio=$(python3 -c "print(f'{$eng / $bare:.3f}')")
    echo "$name $eng $bare $ratio   (engine runs: $(tr '\n' ' ' < "$work/eng"); bare runs: $(tr '\n' ' ' < "$work/bare.txt"))"
done
