"""The guest image: a Debian root file system, its kernel and initramfs, built without a registry.

Built once per machine beside the container image (`images_dir()`, under the
same build lock, scratch dirs journaled) in two cached steps, so a new agent
or engine binary never repeats the slow one:

1. the base (`strata-guest-base-<key>.tar`, ~2 min): `debootstrap
   --variant=minbase` of Debian `SUITE` from the host's own mirror with the
   kernel (linux-image-amd64), fio and the file system tools; kernel modules
   a guest on virtio never loads (GPUs, NICs, sound, ...) and docs removed;
   an initramfs with only what mounts the root (`MODULES=list`: virtio_pci,
   virtio_blk, ext4) and without udev (devtmpfs has the disks);
2. the guest (`strata-guest-<key>/`, ~10 s): the base plus the agent
   (agent.py, the guest's PID 1) and the engine `strata-wml`, as a raw ext4
   image without a journal (the guest mounts it read-only, so any number of
   VMs boot from one file), and beside it the initramfs and the kernel as the
   uncompressed ELF with its PVH entry (no decompression at boot) for direct
   kernel boot. Measured under TCG on a loaded 2-core host: a probe boot takes
   ~8 s, against ~20 s with Debian's bzImage and udev in the initramfs.

Each key hashes its inputs (the recipe constants, the agent's text, the
engine's bytes): an unchanged guest is never rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import lzma
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from strata.core.errors import StrataError
from strata.core.proc import sh
from strata.stack.buildcache import SUITE, build_lock, debootstrap, images_dir, scratch
from strata.stack.journal import Journal
from strata.stack.paths import OUT_DIR, SYNC_DIR
from strata.stack.vm.agent import AGENT_PATH, DATA_DIR, agent_script

PACKAGES = (
    "linux-image-amd64",
    "initramfs-tools",
    "kmod",
    "fio",
    "util-linux",
    "e2fsprogs",
    "xfsprogs",
    "btrfs-progs",
    "procps",
)
INITRAMFS_MODULES = ("virtio_pci", "virtio_blk", "ext4")
# initramfs-tools hooks and scripts left out of the guest's initramfs: udev (8 s of a 20 s TCG boot;
# devtmpfs already has /dev/vda), and what a read-only ext4 root on virtio never needs.
INITRAMFS_DROP = (
    "hooks/udev",
    "scripts/init-top/udev",
    "scripts/init-bottom/udev",
    "hooks/btrfs",
    "scripts/local-premount/btrfs",
    "hooks/dmsetup",
    "hooks/xfs",
    "hooks/fsck",
    "hooks/resume",
    "scripts/local-premount/resume",
    "hooks/keymap",
    "scripts/init-top/keymap",
    "hooks/thermal",
)
# Module directories (under lib/modules/<version>/kernel) a virtio guest may need; the rest is removed.
KEEP_MODULES = (
    "arch",
    "block",
    "crypto",
    "fs",
    "lib",
    "mm",
    "virt",
    "drivers/block",
    "drivers/virtio",
    "drivers/char",
    "drivers/md",
    "drivers/nvdimm",
    "drivers/dax",
    "net/9p",
)
PRUNE = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/locale",
    "usr/share/info",
    "var/cache/apt/archives",
    "var/lib/apt/lists",
)
# What udev's init-bottom script did besides stopping udev: hand the initramfs's /dev (devtmpfs) to the root.
INIT_BOTTOM_DEV = """#!/bin/sh
case "$1" in prereqs) exit 0 ;; esac
mount -n -o move /dev "${rootmnt:?}/dev" || mount -n --move /dev "${rootmnt}/dev"
"""
XZ_MAGIC = b"\xfd7zXZ\x00"
RECIPE_VERSION = 2  # bump when the steps below change in a way the constants do not show
BUILD_TIMEOUT_S = 1800
ROOTFS_HEADROOM = 1.15  # the ext4 image: used bytes x this, plus 64 MiB


@dataclass(frozen=True)
class Guest:
    key: str
    dir: Path
    kernel: Path
    initrd: Path
    rootfs: Path
    manifest: dict


def _hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:12]


def base_key() -> str:
    recipe = json.dumps(
        [SUITE, PACKAGES, INITRAMFS_MODULES, INITRAMFS_DROP, INIT_BOTTOM_DEV, KEEP_MODULES, PRUNE, RECIPE_VERSION]
    )
    return _hash(recipe.encode())


def default_extra_files() -> dict[str, Path]:
    """The engine, when built (as in the Filebench workload's container image)."""
    from strata.core.engine import image_extra_files

    return image_extra_files()


def guest_key(extra_files: Mapping[str, Path] | None = None) -> str:
    extra_files = default_extra_files() if extra_files is None else extra_files
    parts = [base_key().encode(), agent_script().encode()]
    for name in sorted(extra_files):
        if "/" in name or name in ("", ".", ".."):
            raise StrataError(f"extra guest file name {name!r} is not a plain file name", "use a name like strata-wml")
        parts += [name.encode(), Path(extra_files[name]).read_bytes()]
    return _hash(*parts)


def guest_dir(key: str) -> Path:
    return images_dir() / f"strata-guest-{key}"


def load_guest(directory: Path) -> Guest | None:
    try:
        manifest = json.loads((directory / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return Guest(
        manifest["key"], directory, directory / "vmlinux", directory / "initrd.img", directory / "rootfs.img", manifest
    )


def cached_guest(extra_files: Mapping[str, Path] | None = None) -> Guest | None:
    return load_guest(guest_dir(guest_key(extra_files)))


def ensure_guest(extra_files: Mapping[str, Path] | None = None) -> Guest:
    """The guest for these extra files, built once per machine."""
    extra_files = default_extra_files() if extra_files is None else extra_files
    key = guest_key(extra_files)
    found = load_guest(guest_dir(key))
    if found:
        return found
    with build_lock():
        found = load_guest(guest_dir(key))
        if found:
            return found
        journal = Journal(f"guest-build-{os.getpid()}-{secrets.token_hex(2)}")
        try:
            base = base_tarball(journal)
            _build_guest(journal, base, key, extra_files)
        finally:
            journal.close()
    return load_guest(guest_dir(key))


# ---- step 1: the base -----------------------------------------------------------


def base_tarball(journal: Journal) -> Path:
    """Debian with kernel, fio and file system tools, pruned, with a small initramfs (call under the lock)."""
    out = images_dir() / f"strata-guest-base-{base_key()}.tar"
    if out.exists():
        return out
    with scratch(journal, "guest-rootfs") as root:
        debootstrap(root, "the guest", tuple(PACKAGES))
        version = kernel_version(root)
        _prune(root, version)
        _small_initramfs(root, version)
        tmp = out.with_suffix(".tmp")
        sh(["tar", "-C", str(root), "--numeric-owner", "-cf", str(tmp), "."], timeout=BUILD_TIMEOUT_S)
        tmp.rename(out)
    return out


def kernel_version(root: Path) -> str:
    versions = sorted(p.name for p in (root / "usr/lib/modules").iterdir() if (p / "kernel").is_dir())
    if len(versions) != 1:
        raise StrataError(f"the guest has kernels {versions}, expected one", "remove the guest build and retry")
    return versions[0]


def _prune(root: Path, version: str) -> None:
    for rel in PRUNE:
        for p in (root / rel).glob("*"):
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
    kernel = root / "usr/lib/modules" / version / "kernel"
    keep = {kernel / k for k in KEEP_MODULES}
    for top in sorted(kernel.iterdir()):
        _prune_modules(top, keep)
    sh(["chroot", str(root), "depmod", "-a", version])


def _prune_modules(d: Path, keep: set[Path]) -> None:
    """Remove `d` unless it is kept, holds a kept dir (then recurse) or lies inside one."""
    if d in keep or any(k in d.parents for k in keep):
        return
    if any(d in k.parents for k in keep):
        for child in d.iterdir():
            _prune_modules(child, keep) if child.is_dir() else child.unlink()
        return
    shutil.rmtree(d)


def _small_initramfs(root: Path, version: str) -> None:
    for rel in INITRAMFS_DROP:
        (root / "usr/share/initramfs-tools" / rel).unlink(missing_ok=True)
    script = root / "etc/initramfs-tools/scripts/init-bottom/strata-dev"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(INIT_BOTTOM_DEV)
    script.chmod(0o755)
    (root / "etc/initramfs-tools/modules").write_text("".join(m + "\n" for m in INITRAMFS_MODULES))
    conf = root / "etc/initramfs-tools/initramfs.conf"
    lines = [("MODULES=list" if ln.startswith("MODULES=") else ln) for ln in conf.read_text().splitlines()]
    conf.write_text("\n".join(lines) + "\n")
    sh(["chroot", str(root), "update-initramfs", "-u", "-k", version], timeout=BUILD_TIMEOUT_S)


# ---- step 2: the guest ----------------------------------------------------------


def _build_guest(journal: Journal, base: Path, key: str, extra_files: Mapping[str, Path]) -> None:
    final = guest_dir(key)
    with scratch(journal, f"strata-guest-{key}-tmp") as work:
        tree = work / "tree"
        tree.mkdir()
        sh(["tar", "-C", str(tree), "--numeric-owner", "-xf", str(base)], timeout=BUILD_TIMEOUT_S)
        _install_agent(tree, extra_files)
        version = kernel_version(tree)
        out = work / "guest"
        out.mkdir()
        kernel_format = _kernel(tree, version, out / "vmlinux")
        shutil.copy2(tree / "boot" / f"initrd.img-{version}", out / "initrd.img")
        size_bytes = _rootfs_image(tree, out / "rootfs.img")
        manifest = {
            "key": key,
            "base_key": base_key(),
            "suite": SUITE,
            "kernel": version,
            "kernel_format": kernel_format,
            "packages": _package_versions(tree),
            "rootfs_bytes": size_bytes,
            "extra_files": sorted(extra_files),
        }
        (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
        os.rename(out, final)  # the manifest is what load_guest looks for: the guest appears whole


def _kernel(tree: Path, version: str, out: Path) -> str:
    """The kernel for direct boot: the ELF inside Debian's bzImage when the kernel has a PVH entry
    (QEMU then jumps straight into it: under TCG, decompressing the xz bzImage took 10 of a 20 s
    boot), else the bzImage itself."""
    bzimage = (tree / "boot" / f"vmlinuz-{version}").read_bytes()
    config = (tree / "boot" / f"config-{version}").read_text(errors="replace")
    offset = bzimage.find(XZ_MAGIC)
    if "\nCONFIG_PVH=y" in config and offset > 0:
        with contextlib.suppress(lzma.LZMAError):
            elf = lzma.LZMADecompressor().decompress(bzimage[offset:])
            if elf.startswith(b"\x7fELF"):
                out.write_bytes(elf)
                return "elf-pvh"
    out.write_bytes(bzimage)
    return "bzimage"


def _install_agent(tree: Path, extra_files: Mapping[str, Path]) -> None:
    agent = tree / AGENT_PATH.lstrip("/")
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(agent_script())
    agent.chmod(0o755)
    for name, src in sorted(extra_files.items()):
        dst = tree / "usr/local/bin" / name
        shutil.copy2(src, dst)
        dst.chmod(0o755)
    for d in (OUT_DIR, SYNC_DIR, DATA_DIR):
        (tree / d.lstrip("/")).mkdir(parents=True, exist_ok=True)
    (tree / "etc/hostname").write_text("strata-guest\n")


def _rootfs_image(tree: Path, image: Path) -> int:
    used = int(sh(["du", "-sb", "--one-file-system", str(tree)]).stdout.split()[0])
    size_bytes = (int(used * ROOTFS_HEADROOM) + (64 << 20)) >> 20 << 20
    with open(image, "wb") as f:
        f.truncate(size_bytes)
    sh(
        [
            "mkfs.ext4",
            "-q",
            "-F",
            "-O",
            "^has_journal",
            "-L",
            "strata-root",
            "-E",
            "nodiscard",
            "-d",
            str(tree),
            str(image),
        ],
        timeout=BUILD_TIMEOUT_S,
    )
    return size_bytes


def _package_versions(tree: Path) -> dict[str, str]:
    """Versions of the packages that matter to a measurement (dpkg's status file, no chroot)."""
    wanted = {"linux-image-amd64", "fio", "e2fsprogs", "xfsprogs", "btrfs-progs"}
    found = {}
    with contextlib.suppress(OSError):
        for stanza in (tree / "var/lib/dpkg/status").read_text().split("\n\n"):
            fields = dict(ln.split(": ", 1) for ln in stanza.splitlines() if ": " in ln and not ln.startswith(" "))
            if fields.get("Package") in wanted and fields.get("Status", "").endswith("installed"):
                found[fields["Package"]] = fields.get("Version", "")
    return found
