"""Issue 58: reads of blocks never written (a sparse file, a loop device over one) are flagged with their own
reason, not as a cache (results/validity/disks.py `never_written`), from how much of what was read was ever
written (stack/blockdev.py `allocation`)."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from synth_results import make_result  # noqa: E402

from strata.analysis.analyse import analyse  # noqa: E402
from strata.results.validity.disks import cache  # noqa: E402
from strata.stack.blockdev import allocation  # noqa: E402

MiB = 1 << 20
READ = {"read": 256 * MiB, "write": 0}
LAYERS = {"loop5": {"read_bytes": 256 * MiB, "write_bytes": 0}, "vda": {"read_bytes": 0, "write_bytes": 0}}


def test_reads_of_holes_are_said_as_never_written_with_the_fix():
    written = {"size_bytes": 1024 * MiB, "allocated_bytes": 0, "of": "the backing file /x.img of loop5"}
    j = cache(READ, LAYERS, True, "device", written=written)
    assert j.suspect and j.reason.startswith("the data was never written: of the 1,024 MiB read"), j.reason
    assert "(the backing file /x.img of loop5)" in j.reason and "`precondition: fill`" in j.reason
    assert "a cache answered" not in j.reason and j.evidence["written"]["share"] == 0.0


def test_written_data_read_from_a_cache_is_still_a_cache():
    written = {"size_bytes": 1024 * MiB, "allocated_bytes": 1024 * MiB, "of": "the files under the path"}
    j = cache(READ, LAYERS, True, "bind", written=written)
    assert j.suspect and "a cache answered" in j.reason and "never written" not in j.reason
    honest = {"loop5": {"read_bytes": 256 * MiB, "write_bytes": 0}, "vda": {"read_bytes": 256 * MiB, "write_bytes": 0}}
    holes = {**written, "allocated_bytes": 0}
    assert not cache(READ, honest, True, "bind", written=holes).suspect  # the disks moved the bytes: nothing to say


def test_the_allocation_of_a_sparse_file_and_a_written_one(tmp_path):
    sparse, full = tmp_path / "sparse", tmp_path / "d" / "full"
    with open(sparse, "wb") as f:
        f.truncate(8 * MiB)
    full.parent.mkdir()
    full.write_bytes(os.urandom(MiB))
    assert allocation([sparse]) == (8 * MiB, 0)
    size, allocated = allocation([tmp_path])
    assert size == 9 * MiB and MiB <= allocated < 2 * MiB


def test_the_warning_says_never_written_with_its_own_fix():
    r = make_result(fs="raw", rep=0, value=90000, cache=True)
    r["flags"]["cache"]["reason"] = "the data was never written: of the 1,024 MiB read ..."
    (w,) = [w for w in analyse([r]).warnings if w.kind == "cache"]
    assert "1 read data never written" in w.message and "`precondition: fill`" in w.fix, (w.message, w.fix)
    assert "O_DIRECT" not in w.fix
