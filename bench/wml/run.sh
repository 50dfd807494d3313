#!/usr/bin/env bash
# Speed of strata-wml against a bare C loop making the same system calls
# (bare.c), on tmpfs, with each personality's own thread count.
# Prints: personality engine_ops/s bare_ops/s ratio
# Usage: bench/wml/run.sh [SECONDS]   (default 10; needs root for the mount)
set -euo pipefail
secs=${1:-10}
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

echo "personality engine_ops/s bare_ops/s ratio"
for p in webserver:100 varmail:16 fileserver:50; do
    name=${p%%:*}
    threads=${p##*:}
    f="$pers/$name.f"
    eng=$("$engine" run "$f" --json --runtime "$secs" --set "\$dir=$mnt" 2>/dev/null |
        python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e["type"] == "end": print(round(e["data"]["summary"]["ops_per_s"]))')
    rm -rf "${mnt:?}"/*
    "$engine" create "$f" --set "\$dir=$mnt" > "$work/listing.tsv" 2>/dev/null
    bare=$("$work/bare" "$name" "$work/listing.tsv" "$threads" "$secs")
    rm -rf "${mnt:?}"/*
    ratio=$(python3 -c "print(f'{$eng / $bare:.3f}')")
    echo "$name $eng $bare $ratio"
done
