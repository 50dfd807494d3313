"""YCSB's output and Cassandra's counters as strata reads them, under seeded fuzz (docs/style.md, item 12).

The captured YCSB 0.17.0 clients of tests/data/ycsb/0.17.0 (summary, `-s` status lines, HdrHistogram logs) are cut,
garbled and given lines they never write, and their histograms re-encoded with another header or payload (a
valid deflate stream, so the decoder's own arithmetic is reached): each answer is the clients' figures, typed, or a
parse failure. Counters.java's records of a measured run (their members dropped or of another type) always give a
summary, since a node that could not say is an unknown, never a failed trial.
"""

import base64
import copy
import json
import math
import random
import shutil
import struct
import time
import zlib
from collections import Counter
from pathlib import Path

import pytest

from strata.core.errors import TrialFailure
from strata.workloads import hdr
from strata.workloads.ycsb import conf, counters, parse
from strata.workloads.ycsb.params import YcsbParams

DATA = Path(__file__).parents[1] / "data" / "ycsb" / "0.17.0"
RUNS = ("run-a-dataintegrity", "run-a-target-intended")
# Lines a client never writes: a figure that is no number, a date that is none, a histogram cut short
JUNK = [
    "[READ], Operations, x\n",
    "[OVERALL], Throughput(ops/sec), 27.4.9\n",
    "[READ], Return=OK, 99999999999999999999999\n",
    "[UPDATE], AverageLatency(us), -1e999\n",
    "[OVERALL], RunTime(ms), NaN\n",
    "2026-13-45 99:99:99:999 3 sec: 10 operations; 5.0 current ops/sec;\n",
    "2026-11-23 09:06:00:768 99999999999999999999 sec: 1 operations; 1.2.3 current ops/sec;\n",
    "1.0,1.0,1.0,HISTFAAAAHB42pNp\n",
    "#[StartTime: x (seconds since epoch)]\n",
    "\x00\n",
]


def _mutate(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            lines = lines[:i]  # cut short
        elif op == 1:
            del lines[i]
        elif op == 2:
            lines.insert(i, lines[rng.randrange(len(lines))])  # a line twice
        elif op == 3:
            ln = lines[i]
            j = rng.randrange(max(len(ln), 1))
            lines[i] = ln[:j] + rng.choice("0123456789.,:;[]- xA+/=\t") + ln[j + 1 :]
        elif op == 4:
            lines.insert(i, rng.choice(JUNK))
        else:
            lines[i] = lines[i][: rng.randrange(max(len(lines[i]), 1))]  # a line cut
    return "".join(lines)


# ---- HdrHistogram's V2 encoding, to re-encode a histogram with another header or payload ---------------------


def _inner(b64: str) -> tuple[int, list, bytes]:
    """(cookie, header fields, payload) of a compressed V2 histogram as YCSB writes it."""
    raw = base64.b64decode(b64)
    cookie, length = struct.unpack_from(">ii", raw)
    inner = zlib.decompress(raw[8 : 8 + length])
    return cookie, list(hdr.V2_HEADER.unpack_from(inner)), inner[hdr.V2_HEADER.size :]


def _encode(cookie: int, header: list, payload: bytes) -> str:
    z = zlib.compress(hdr.V2_HEADER.pack(*header) + payload)
    return base64.b64encode(struct.pack(">ii", cookie, len(z)) + z).decode()


def _zigzag(n: int) -> bytes:
    """One count (a run of zeros when negative) as HdrHistogram writes it (below 2^56: plain LEB128)."""
    v, out = (2 * n if n >= 0 else -2 * n - 1), bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))


HEADER_VALUES = {  # header field -> what a corrupted one may say (payload length, offset, digits, lowest, highest)
    1: [0, -1, 1, 2**31 - 1],
    2: [0, 1, -1],
    3: [0, 1, 5, 6, 100, 2**31 - 1, -1],
    4: [1, 0, -1, 2**62, -(2**63)],
    5: [0, -1, 2**63 - 1],
}


def _reencode(rng: random.Random, line: str) -> str:
    """A histogram log line whose histogram has a header field or its payload changed, in a valid envelope."""
    *fields, b64 = line.rstrip("\n").split(",")
    cookie, header, payload = _inner(b64)
    op = rng.randrange(4)
    if op == 0:
        field = rng.choice(sorted(HEADER_VALUES))
        header[field] = rng.choice(HEADER_VALUES[field])
    elif op == 1 and payload:
        i = rng.randrange(len(payload))
        payload = payload[:i] + bytes([rng.randrange(256)]) + payload[i + 1 :]
    elif op == 2:  # a count far out, a huge count, a run of zeros off the grid
        i = rng.randrange(len(payload) + 1)
        payload = payload[:i] + _zigzag(rng.choice([-(2**40), 2**55, -(2**20), 1])) + payload[i:]
        header[1] = len(payload)
    else:
        payload = payload[: rng.randrange(len(payload) + 1)]
    return ",".join([*fields, _encode(cookie, header, payload)]) + "\n"


def _mutate_log(rng: random.Random, text: str) -> str:
    if rng.random() < 0.5:
        return _mutate(rng, text)
    lines = text.splitlines(keepends=True)
    logged = [i for i, ln in enumerate(lines) if ln[:1].isdigit()]
    for i in rng.sample(logged, k=min(len(logged), rng.randint(1, 2))):
        lines[i] = _reencode(rng, lines[i])
    return "".join(lines)


def _client(tmp_path: Path, rng: random.Random, name: str) -> Path:
    d = tmp_path / name
    shutil.copytree(DATA / rng.choice(RUNS), d)
    files = [d / "stdout.txt", d / "stderr.txt", *sorted((d / "hdr").glob("*.hdr"))]
    for f in rng.sample(files, k=rng.randint(1, 3)):
        f.write_text((_mutate_log if f.suffix == ".hdr" else _mutate)(rng, f.read_text()))
    return d


def _typed_latency(lat: dict) -> bool:
    n = lat["n"]
    others = [v for k, v in lat.items() if k != "n"]
    return isinstance(n, int) and n >= 0 and all(v is None or isinstance(v, (int, float)) for v in others)


def test_fuzz_ycsbs_output_is_read_or_a_parse_failure_never_a_traceback(tmp_path):
    """One or two clients, one to three of each one's files garbled: their figures typed as a reader takes them
    (operations and return codes counted in whole numbers, figures and series floats, each latency a count and
    numbers), or a parse failure whose message is short."""
    rng = random.Random(61_05_02)
    answers = Counter()
    for n in range(250):
        dirs = [_client(tmp_path, rng, f"c{n}-{k}") for k in range(rng.choice([1, 1, 2]))]
        started = time.monotonic()
        try:
            outs = [parse.client_output(d) for d in dirs]
            summaries = [parse.parse_summary(o.stdout) for o in outs]
            points = [p for o in outs for p in parse.parse_status(o.stderr)]
            agg = parse.aggregate(outs)
        except TrialFailure as e:
            assert e.category == "parse" and len(str(e)) < 1000, (n, e)
            answers["parse"] += 1
        else:
            answers["read"] += 1
            for s in summaries:
                assert all(isinstance(v, int) for v in s.operations.values()), (n, s.operations)
                assert all(isinstance(v, int) for codes in s.returns.values() for v in codes.values()), n
                assert all(isinstance(v, float) for figs in s.reported.values() for v in figs.values()), n
                assert all(v is None or isinstance(v, float) for v in (s.runtime_ms, s.throughput_ops_s)), n
            for p in points:
                assert isinstance(p.time_s, float) and isinstance(p.elapsed_s, int) and isinstance(p.operations, int)
                assert p.ops_per_s is None or isinstance(p.ops_per_s, float), (n, p)
            assert isinstance(agg["throughput_ops_s"], (int, float)) and isinstance(agg["errors"], int), n
            assert all(isinstance(v, int) for v in agg["operations"].values()), (n, agg["operations"])
            assert all(_typed_latency(lat) for lat in agg["latency"].values()), (n, agg["latency"])
            assert all(isinstance(v, float) for v in agg["series_ops_s"]), n
            assert agg["window_ops_s"] is None or isinstance(agg["window_ops_s"], float), n
            assert agg["start_skew_s"] is None or agg["start_skew_s"] >= 0, n
        assert time.monotonic() - started < 2, n  # nothing a header says makes the decoder build huge numbers
        for d in dirs:
            shutil.rmtree(d)
    assert answers["read"] > 30 and answers["parse"] > 100, answers


def _one_client(tmp_path: Path, file: str, edit) -> list[parse.ClientOutput]:
    d = tmp_path / "client"
    shutil.copytree(DATA / RUNS[0], d)
    f = d / file
    new = edit(f.read_text())
    f.write_bytes(new if isinstance(new, bytes) else new.encode())
    return [parse.client_output(d)]


def _first_logged(text: str, new) -> str:
    """The log's first histogram line replaced by new(line)."""
    lines = text.splitlines(keepends=True)
    i = next(i for i, ln in enumerate(lines) if ln[:1].isdigit())
    return "".join([*lines[:i], new(lines[i]), *lines[i + 1 :]])


def _header(field: int, value: int):
    def new(line: str) -> str:
        *fields, b64 = line.rstrip("\n").split(",")
        cookie, header, payload = _inner(b64)
        header[field] = value
        return ",".join([*fields, _encode(cookie, header, payload)]) + "\n"

    return new


def _far_count(line: str) -> str:
    *fields, b64 = line.rstrip("\n").split(",")
    cookie, header, _ = _inner(b64)
    payload = _zigzag(-(2**40)) + _zigzag(1)  # one count 2^40 buckets up: a value of 2^(2^30) us
    header[1] = len(payload)
    return ",".join([*fields, _encode(cookie, header, payload)]) + "\n"


# (file, edit, what escaped before the fix)
UNREADABLE = {
    "a figure that is no number": ("stdout.txt", lambda t: t + "[READ], Operations, x\n", "ValueError"),
    "a figure written twice over": (
        "stdout.txt",
        lambda t: t.replace("[READ], MinLatency(us), 371", "[READ], MinLatency(us), [READ], MaxLatency(us), 3"),
        "ValueError",
    ),
    "a date that is none": (
        "stderr.txt",
        lambda t: t + "2026-13-45 09:06:01:513 1 sec: 0 operations;\n",
        "ValueError: time data does not match",
    ),
    "a status figure of two points": (
        "stderr.txt",
        lambda t: t + "2026-11-23 09:06:01:513 1 sec: 5 operations; 1.2.3 current ops/sec;\n",
        "ValueError: could not convert string to float",
    ),
    "a histogram cut short": ("hdr/READ.hdr", lambda t: t + "1.0,1.0,1.0,HISTFAAAAHB42pNp\n", "zlib.error"),
    "a base64 string cut": ("hdr/READ.hdr", lambda t: t + "1.0,1.0,1.0,HISTFAAAAHB42pN\n", "binascii.Error"),
    "a deflate stream garbled": (
        "hdr/READ.hdr",
        lambda t: _first_logged(t, lambda ln: ln[:-30] + ("A" if ln[-30] != "A" else "B") + ln[-29:]),
        "zlib.error",
    ),
    "a byte that is no UTF-8": ("hdr/READ.hdr", lambda t: b"\xff" + t.encode(), "UnicodeDecodeError"),
    "a start time that is none": ("hdr/READ.hdr", lambda t: "#[StartTime: x]\n" + t, "ValueError"),
    "a time stamp of two points": ("hdr/READ.hdr", lambda t: _first_logged(t, lambda ln: "1." + ln), "ValueError"),
    "a histogram of another grid": ("hdr/READ.hdr", lambda t: _first_logged(t, _header(3, 2)), "HdrError from merge"),
    "a lowest value of 0": ("hdr/READ.hdr", lambda t: _first_logged(t, _header(4, 0)), "ValueError: math domain"),
    "2^31-1 significant digits": (
        "hdr/READ.hdr",
        lambda t: _first_logged(t, _header(3, 2**31 - 1)),
        "no answer: 10**(2^31-1) computed",
    ),
    "a count far beyond the grid": ("hdr/READ.hdr", lambda t: _first_logged(t, _far_count), "OverflowError"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_client_output_ycsb_never_writes_is_a_parse_failure(tmp_path, case):
    """What the fuzz found (the dict's third column: what escaped before, or the hang): each a parse failure,
    at once."""
    file, edit, _ = UNREADABLE[case]
    outs = _one_client(tmp_path, file, edit)
    started = time.monotonic()
    with pytest.raises(TrialFailure) as e:
        parse.aggregate(outs)
    assert e.value.category == "parse" and len(str(e.value)) < 1000 and time.monotonic() - started < 2
    assert (
        ("READ.hdr" in str(e.value) or "grid" in str(e.value)) if file.startswith("hdr/") else "YCSB's" in str(e.value)
    )


def test_the_decoder_refuses_a_header_hdrhistogram_never_writes():
    line = next(ln for ln in (DATA / RUNS[0] / "hdr" / "READ.hdr").read_text().splitlines() if ln[:1].isdigit())
    b64 = line.split(",")[-1]
    assert hdr.decode(b64).total > 0
    for field, value, says in [
        (3, 2**31 - 1, "2147483647 significant digits"),
        (3, 6, "6 significant digits"),
        (4, 0, "lowest value 0"),
    ]:
        with pytest.raises(hdr.HdrError, match=says):
            hdr.decode(_header(field, value)(line).split(",")[-1])
    with pytest.raises(hdr.HdrError, match="beyond the grid's last"):
        hdr.decode(_far_count(line).split(",")[-1])
    with pytest.raises(hdr.HdrError, match="not an encoded histogram"):
        hdr.decode("HISTFAAAAHB42pNp")


# ---- Cassandra's counters ----------------------------------------------------------------------------


def _node(address: str, scale: int, mib: int) -> dict:
    """One node's counters as Counters.java writes them (`read` mode)."""
    return {
        "address": address,
        "MemtableFlushWriter": {"completed": 3 * scale, "pending": 0, "active": 0},
        "CompactionExecutor": {"completed": 5 * scale, "pending": scale % 2, "active": 0},
        "sstable_mib": mib,
        "local_reads": 1000 * scale,
        "local_writes": 900 * scale,
        "caches": {
            "keys": {
                "entries": 10,
                "hits": 40 * scale,
                "requests": 50 * scale,
                "size_bytes": 4096,
                "capacity_bytes": 1 << 20,
            },
            "rows": {"entries": 0, "hits": 0, "requests": 0, "size_bytes": 0, "capacity_bytes": 0},
        },
        "settings": {"commitlog_sync": "periodic", "commitlog_sync_period": "10000ms", "disk_access_mode": "mmap"},
    }


def _record(rng: random.Random) -> dict:
    """A host's clients.json with its nodes' counters before and after the run (one of them may have failed)."""
    k = rng.randint(1, 3)
    after = [_node(f"127.0.1.{i + 1}", 3, 14) for i in range(k)]
    for a in after:
        if rng.random() < 0.5:
            a["probe"] = {"reads": 10, "untraced": 0, "sstables_read": [0, 1, 1, 2]}
    if rng.random() < 0.2:
        after[-1] = {"address": after[-1]["address"], "error": "NoHostAvailableException: All host(s) tried"}
    return {
        "servers": k,
        "observed": {"before": [_node(f"127.0.1.{i + 1}", 1, 10) for i in range(k)], "after": after},
        "flushed": {"ok": True, "s": 1.2},
        "memory": {"bytes": 8 << 30, "of": "MemTotal, the host's memory"},
    }


ODD_COUNTERS = ["x", None, [], {}, -1, -(10**12), 2**63 - 1, 10**30, 10**400, True, 1.5, math.nan, "", [1, "a"]]


def _members(v, at=()):
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []
    for k, x in items:
        yield at + (k,)
        yield from _members(x, at + (k,))


def _mutate_record(rng: random.Random, record: dict) -> dict:
    for _ in range(rng.randint(1, 4)):
        *up, key = rng.choice(list(_members(record)))
        parent = record
        for k in up:
            parent = parent[k]
        r = rng.random()
        if r < 0.25:
            del parent[key]
        elif r < 0.35 and isinstance(parent, dict):
            parent[rng.choice(["error", "sstable_mib", "probe", "settings", "caches"])] = rng.choice(ODD_COUNTERS)
        else:
            parent[key] = copy.deepcopy(rng.choice(ODD_COUNTERS))
    return record


def _int_or_none(v) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool))


def test_fuzz_cassandras_counters_always_give_a_typed_summary():
    """Whatever a node's counters hold, the summary is whole numbers or unknowns (never a number a ratio or a
    size overflows on), the SSTables' bytes whole and not negative where no node said a negative size, the
    settings a map, and the memory the cache check judges whole bytes."""
    rng = random.Random(61_05_03)
    for n in range(500):
        record = _mutate_record(rng, _record(rng))
        params = YcsbParams(
            settings=rng.choice([{}, {"commitlog_sync": "batch", "commitlog_sync_batch_window": "2ms"}])
        )
        s = counters.summary(record)
        json.dumps(s)
        nodes = s["nodes"] if s is not None else []
        for node in nodes:
            assert isinstance(node, dict) and "address" in node, (n, node)
            if "error" in node:
                continue
            assert all(_int_or_none(node[k]) for k in ("flushes_in_run", "sstable_mib", "local_reads_in_run")), n
            for cache in (node["key_cache"], node["row_cache"]):
                assert _int_or_none(cache["hits_in_run"]) and _int_or_none(cache["size_bytes"]), (n, cache)
                ratio = cache["hit_ratio_in_run"]
                assert ratio is None or (isinstance(ratio, float) and math.isfinite(ratio)), (n, cache)
            assert isinstance(node["settings"], dict), n
        size = counters.sstable_bytes(s)
        assert _int_or_none(size), (n, size)
        if size is not None and all(node.get("sstable_mib", 0) >= 0 for node in nodes):
            assert size >= 0, (n, size)
        said = counters.settings_of(s)
        assert isinstance(said, dict) and isinstance(conf.durability(said, params.settings).to_json()["durable"], bool)
        judged = counters.memory_judged(params, record, s, rng.randint(1, 3), rng.choice([0, 100]))
        if judged is not None:
            assert isinstance(judged["data_set_bytes"], int) and judged["data_set_bytes"] > 0, (n, judged)
            assert isinstance(judged["memory_bytes"], int), (n, judged)


def test_a_counter_beyond_a_java_long_is_unknown_not_an_overflow():
    """What the fuzz found: a cache's hits of 10^400 overflowed the hit ratio (OverflowError), SSTables of
    10^400 MiB the cache check's fix; Counters.java writes Java longs, so such a figure is no counter."""
    record = _record(random.Random(1))
    record["observed"]["after"][0]["caches"]["keys"]["hits"] = 10**400
    record["observed"]["after"][0]["sstable_mib"] = 10**400
    s = counters.summary(record)
    assert s is not None and s["nodes"][0]["key_cache"]["hits_in_run"] is None
    assert s["nodes"][0]["sstable_mib"] is None and counters.sstable_bytes(s) is None
    judged = counters.memory_judged(YcsbParams(), record, s, 1, 0)
    assert judged is not None and "the rows" in judged["data_set_of"]


def test_a_cleanup_log_two_threads_wrote_at_once_is_not_read(tmp_path):
    """YCSB opens the CLEANUP log from the first thread that cleans up; two at once can both open it, and one
    truncates the other's line (the bytes of a full tier's trial, 2026-12-07). CLEANUP is never reported: the
    trial is read as before, its operations' latency the same."""
    header = (
        "#[Logging for: CLEANUP]\n#[Histogram log format version 1.3]\n"
        "#[StartTime: 1796684316.280 (seconds since epoch), Mon Dec 07 22:58:36 UTC 2026]\n"
        '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"\n'
    )
    lines = (
        "0.009,0.039,0.022,HISTFAAAACR42pNpmSzMwMDAxgABzFCaEULV/7f/AGGxMjGdD2UCAGQJBS0=\n"
        "0.048,0.018,0.000,HISTFAAAABx42pNpmSzMwMDAyAABzFAaxmey/wBlAQA8yQJ9\n"
    )
    garbled = header + "\0" * 72 + lines
    d = tmp_path / "client"
    shutil.copytree(DATA / "run-a-target-intended", d)
    before = parse.aggregate([parse.client_output(d)])
    for name in ("CLEANUP", "Intended-CLEANUP"):
        (d / "hdr" / f"{name}.hdr").write_text(garbled)
        after = parse.aggregate([parse.client_output(d)])
        assert after["latency"] == before["latency"] and "Intended-READ" in after["latency"], name
