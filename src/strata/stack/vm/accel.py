"""Which accelerator boots a guest here, found by booting one (and which shares work in it).

`/dev/kvm` existing proves nothing: on the project's machine it is a PVM
module and QEMU aborts ("failed to set MSR 0x10a") before the guest runs. So
the probe boots the real guest (agent in probe mode: it says `booted`, tries
to mount a virtiofs and a 9p share, writes a file on each and powers off)
under KVM with a short timeout, then under TCG if KVM failed. The result is
cached per boot of the host (/proc/sys/kernel/random/boot_id), per QEMU
version and per guest, in the images dir beside the guest.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from strata.core.jsondoc import JsonObject, as_obj, flag, num, text
from strata.stack.buildcache import images_dir
from strata.stack.journal import Journal
from strata.stack.vm.agent import PROBE_MARK, TAGS
from strata.stack.vm.guest import Guest
from strata.stack.vm.qemu import (
    Share,
    VmSpec,
    qemu_argv,
    qemu_version,
    spawn,
    stop_proc,
    virtiofsd_argv,
    virtiofsd_binary,
)
from strata.stack.vm.rundir import RunDir, wait_for_socket

PROBE_TIMEOUT_S = {"kvm": 60.0, "tcg": 300.0}
PROBE_MEMORY_BYTES = 512 << 20
CONSOLE_TAIL_CHARS = 3000


@dataclass
class Probe:
    accel: str
    boots: bool
    boot_s: float | None
    error: str | None  # why it did not boot (QEMU's own words, or the console's tail)
    virtiofs: bool
    ninep: bool


def boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return "unknown"


def cache_path() -> Path:
    return images_dir() / f"vm-accel-{boot_id()}.json"


def kvm_unusable() -> str | None:
    """Why KVM cannot even be tried (a probe boot decides the rest)."""
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
    except OSError as e:
        return f"/dev/kvm: {e.strerror}"
    os.close(fd)
    return None


def probe(guest: Guest, accel: str, journal: Journal) -> Probe:
    """Boot the guest once under `accel` (cached for this host boot)."""
    key = f"{accel}|{qemu_version()}|{guest.key}"
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent runs probe once
        cached = _read_cache(path)
        if key in cached:
            return probe_of(as_obj(cached[key], key))
        result = _probe_boot(guest, accel, journal)
        cached[key] = asdict(result)
        tmp = path.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps(cached, indent=1))
        tmp.rename(path)
    return result


def _read_cache(path: Path) -> JsonObject:
    try:
        return as_obj(json.loads(path.read_text()), str(path))
    except (OSError, ValueError):
        return {}


def probe_of(d: JsonObject) -> Probe:
    """A probe as the cache stored it (`asdict`)."""
    error = d.get("error")
    return Probe(
        text(d, "accel"),
        flag(d, "boots"),
        num(d, "boot_s"),
        error if isinstance(error, str) else None,
        flag(d, "virtiofs"),
        flag(d, "ninep"),
    )


def _probe_boot(guest: Guest, accel: str, journal: Journal) -> Probe:
    if accel == "kvm":
        reason = kvm_unusable()
        if reason:
            return Probe(accel, False, None, reason, False, False)
    with RunDir(journal, "probe") as run:
        (run.path / "vfs").mkdir()
        (run.path / "9p").mkdir()
        shares, procs = [Share(TAGS["sync"], str(run.path / "9p"), "9p")], []
        try:
            binary = virtiofsd_binary()
            if binary:
                sock = str(run.path / "vfs.sock")
                procs.append(
                    spawn(
                        "virtiofsd",
                        virtiofsd_argv(binary, sock, str(run.path / "vfs")),
                        sock,
                        journal,
                        run.path / "virtiofsd.log",
                    )
                )
                if wait_for_socket(sock, procs[-1].popen, 10):
                    shares.insert(0, Share(TAGS["out"], str(run.path / "vfs"), "virtiofs", sock))
            spec = VmSpec(
                accel,
                1,
                PROBE_MEMORY_BYTES,
                str(guest.kernel),
                str(guest.initrd),
                str(guest.rootfs),
                str(run.path / "console.log"),
                str(run.path / "qemu.pid"),
                "strata.mode=probe",
                None,
                tuple(shares),
            )
            t0 = time.monotonic()
            qemu = spawn("qemu", qemu_argv(spec), spec.pidfile, journal, run.path / "qemu.log")
            procs.append(qemu)
            with contextlib.suppress(subprocess.TimeoutExpired):
                qemu.popen.wait(PROBE_TIMEOUT_S[accel])
            boot_s = time.monotonic() - t0
            console = _read(run.path / "console.log")
            booted = PROBE_MARK in console
            error = (
                None
                if booted
                else (
                    _read(run.path / "qemu.log").strip()[-CONSOLE_TAIL_CHARS:]
                    or f"no `{PROBE_MARK}` on the console within {PROBE_TIMEOUT_S[accel]:.0f} s: "
                    f"{console[-CONSOLE_TAIL_CHARS:]}"
                )
            )
            return Probe(
                accel,
                booted,
                round(boot_s, 2) if booted else None,
                error,
                (run.path / "vfs" / "probe-virtiofs").exists(),
                (run.path / "9p" / "probe-9p").exists(),
            )
        finally:
            for p in reversed(procs):
                stop_proc(p, journal)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def choose(guest: Guest, requested: str, journal: Journal) -> tuple[Probe, Probe | None]:
    """The accelerator to use and, under auto, the KVM probe that failed (its error goes in the facts)."""
    if requested == "tcg":
        return probe(guest, "tcg", journal), None
    kvm = probe(guest, "kvm", journal)
    if kvm.boots or requested == "kvm":
        return kvm, None
    return probe(guest, "tcg", journal), kvm
