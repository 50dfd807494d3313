"""What every device plugin needs: sysfs facts of a block device, the disk under a file, a filled file."""

from __future__ import annotations

import os
from pathlib import Path

from strata.errors import StrataError
from strata.proc import sh
from strata.stack.journal import undo_action


@undo_action("file")
def _undo_file(data: dict) -> None:
    """A backing file strata filled (a loop image, a remote device's backing store)."""
    Path(data["path"]).unlink(missing_ok=True)


def block_facts(kernel_name: str) -> dict:
    sysfs = Path("/sys/class/block") / kernel_name
    facts: dict = {"kernel_name": kernel_name}
    for key, rel in (
        ("model", "device/model"),
        ("vendor", "device/vendor"),
        ("rotational", "queue/rotational"),
        ("scheduler", "queue/scheduler"),
        ("logical_block_size", "queue/logical_block_size"),
    ):
        try:
            facts[key] = (sysfs / rel).read_text().strip()
        except OSError:
            pass
    try:
        facts["size_bytes"] = int((sysfs / "size").read_text()) * 512
    except OSError:
        pass
    return facts


def disk_of(path: str) -> str | None:
    """The whole-disk kernel name holding `path` (a file), via its st_dev."""
    st = os.stat(path)
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not link.exists():
        return None
    real = link.resolve()
    if (real / "partition").exists():
        real = real.parent
    return real.name


def fill_file(path: Path, size_bytes: int) -> None:
    """Write every block with O_DIRECT: a sparse or fallocated image answers reads of
    unwritten blocks without touching the disk (measured here: 174k IOPS at QD4 from a
    sparse image against ~12k from a written one)."""
    mib = size_bytes >> 20
    r = sh(
        ["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={mib}", "oflag=direct", "conv=fsync", "status=none"],
        check=False,
        timeout=3600,
    )
    if r.returncode != 0:
        path.unlink(missing_ok=True)
        raise StrataError(
            f"could not write the image {path}: {r.stderr.strip()}",
            "free space in the workdir or choose a smaller `size`",
        )


def needs_root() -> str | None:
    return None if os.geteuid() == 0 else "needs root"
