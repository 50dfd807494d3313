"""The guest image: a Debian root file system, its kernel and initramfs, built without a registry.

A guest holds what a workload's image declares (`Workload.image()`: Debian packages, files, trees), as a
container image does, so a new workload runs in a VM without a change here. Built once per machine and
image beside the container images (`images_dir()`, under the same build lock, scratch dirs journaled) in
two cached steps, so a new agent or engine binary never repeats the slow one:

1. the base (`strata-guest-base-<key>.tar`, ~2 min): `debootstrap
   --variant=minbase` of Debian `SUITE` from the host's own mirror with the
   kernel (linux-image-amd64) and the file system tools, and the packages
   the workload's image adds (fio's: fio); kernel modules a guest on virtio never loads (GPUs, NICs,
   sound, ...) and docs removed; an initramfs with only what mounts the root
   (`MODULES=list`: virtio_pci, virtio_blk, ext4) and without udev (devtmpfs
   has the disks);
2. the guest (`strata-guest-<key>/`, ~10 s): the base plus the agent
   (agent.py, the guest's PID 1) and the image's files (in /usr/local/bin: the
   engine `strata-wml` for Filebench) and trees, as a raw ext4 image without a
   journal (the guest mounts it read-only, so any number of VMs boot from one
   file), and beside it the initramfs and the kernel as the uncompressed ELF
   with its PVH entry (no decompression at boot) for direct kernel boot.
   Measured under TCG on a loaded 2-core host: a probe boot takes ~8 s,
   against ~20 s with Debian's bzImage and udev in the initramfs.

The accelerator's probe boots the bare guest (`BARE`: the agent only). Each key hashes its inputs (the
recipe constants, the packages, the agent's text, the image's files and trees): an unchanged guest is
never rebuilt.
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
from typing import Callable

from strata.core.errors import StrataError
from strata.core.instances import Build, ImageSpec
from strata.core.jsondoc import JsonObject
from strata.core.proc import sh
from strata.stack.buildcache import SUITE, build_lock, debootstrap, images_dir, scratch
from strata.stack.journal import Journal
from strata.stack.paths import OUT_DIR, SYNC_DIR
from strata.stack.vm.agent import AGENT_PATH, DATA_DIR, agent_script

PACKAGES = (
    "linux-image-amd64",
    "initramfs-tools",
    "kmod",
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
BARE = ImageSpec("bare")  # the agent only: the guest the accelerator's probe boots
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
    manifest: JsonObject


def _hash(*parts: bytes) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(hashlib.sha256(p).digest())
    return h.hexdigest()[:12]


def base_key(packages: tuple[str, ...] = ()) -> str:
    """The base's recipe, with the packages a workload's image adds to PACKAGES (none: the usual base)."""
    recipe = json.dumps(
        [SUITE, PACKAGES, INITRAMFS_MODULES, INITRAMFS_DROP, INIT_BOTTOM_DEV, KEEP_MODULES, PRUNE, RECIPE_VERSION]
    )
    return _hash(recipe.encode(), *(p.encode() for p in packages))


def extra_packages(image: ImageSpec) -> tuple[str, ...]:
    """What the image needs beyond the base's packages (the workload's tools: fio's is fio)."""
    return tuple(sorted(set(image.packages) - set(PACKAGES)))


def guest_key(image: ImageSpec = BARE) -> str:
    """The guest of a workload's image (Workload.image(): its packages, files and trees), as a container
    image is: the base with the image's packages, then its files in /usr/local/bin and its trees."""
    for name, _ in image.files:
        if "/" in name or name in ("", ".", ".."):
            raise StrataError(f"image file name {name!r} is not a plain file name", "use a name like strata-wml")
    return _hash(base_key(extra_packages(image)).encode(), agent_script().encode(), image.key().encode())


def guest_facts(guest: Guest) -> JsonObject:
    """What a result says of the guest its VMs booted."""
    m = guest.manifest
    return {"key": guest.key, "suite": m.get("suite"), "kernel": m.get("kernel"), "packages": m.get("packages", {}),
            "image": m.get("image")}  # fmt: skip


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


def cached_guest(image: ImageSpec = BARE) -> Guest | None:
    return load_guest(guest_dir(guest_key(image)))


def ensure_guest(image: ImageSpec = BARE) -> Guest:
    """The guest of this image, built once per machine (BARE: the agent only, for the accelerator's probe)."""
    key = guest_key(image)
    found = load_guest(guest_dir(key))
    if found:
        return found
    with build_lock():
        found = load_guest(guest_dir(key))
        if found:
            return found
        journal = Journal(f"guest-build-{os.getpid()}-{secrets.token_hex(2)}")
        try:
            base = base_tarball(journal, extra_packages(image))
            _build_guest(journal, base, key, image)
        finally:
            journal.close()
    built = load_guest(guest_dir(key))
    if built is None:  # the build returned without leaving its manifest: never hand a caller None
        raise StrataError(
            f"the guest image {guest_dir(key)} was built but has no readable manifest.json",
            f"remove {guest_dir(key)} and run `strata prepare` again",
        )
    return built


def guest_build(name: str, image_of: Callable[[], ImageSpec]) -> Build:
    """A workload's guest as `strata prepare` builds it (`image_of` called late, as for a container image)."""
    return Build(
        f"VM guest ({name})",
        lambda: guest_key(image_of()),
        lambda: cached_guest(image_of()) is not None,
        lambda: ensure_guest(image_of()),
        image=True,
    )


# ---- step 1: the base -----------------------------------------------------------


def base_tarball(journal: Journal, packages: tuple[str, ...] = ()) -> Path:
    """Debian with kernel and file system tools (and `packages`), pruned, with a small initramfs (call under
    the lock)."""
    out = images_dir() / f"strata-guest-base-{base_key(packages)}.tar"
    if out.exists():
        return out
    with scratch(journal, "guest-rootfs") as root:
        debootstrap(root, "the guest", (*PACKAGES, *packages))
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


def _build_guest(journal: Journal, base: Path, key: str, image: ImageSpec) -> None:
    final = guest_dir(key)
    with scratch(journal, f"strata-guest-{key}-tmp") as work:
        tree = work / "tree"
        tree.mkdir()
        sh(["tar", "-C", str(tree), "--numeric-owner", "-xf", str(base)], timeout=BUILD_TIMEOUT_S)
        _install_agent(tree, image)
        version = kernel_version(tree)
        out = work / "guest"
        out.mkdir()
        kernel_format = _kernel(tree, version, out / "vmlinux")
        shutil.copy2(tree / "boot" / f"initrd.img-{version}", out / "initrd.img")
        size_bytes = _rootfs_image(tree, out / "rootfs.img")
        manifest = {
            "key": key,
            "base_key": base_key(extra_packages(image)),
            "suite": SUITE,
            "kernel": version,
            "kernel_format": kernel_format,
            "packages": _package_versions(tree, image),
            "rootfs_bytes": size_bytes,
            "image": {
                "name": image.name,
                "packages": sorted(image.packages),
                "files": sorted(n for n, _ in image.files),
                "trees": sorted(d for d, _ in image.trees),
            },
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


def _install_agent(tree: Path, image: ImageSpec) -> None:
    """The agent (the guest's PID 1), and the image's files and trees where a container image has them."""
    agent = tree / AGENT_PATH.lstrip("/")
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(agent_script())
    agent.chmod(0o755)
    for name, src in sorted(image.files):
        dst = tree / "usr/local/bin" / name
        shutil.copy2(src, dst)
        dst.chmod(0o755)
    for dest, src in sorted(image.trees):
        shutil.copytree(src, tree / dest.lstrip("/"), symlinks=True, dirs_exist_ok=True)
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


def _package_versions(tree: Path, image: ImageSpec) -> dict[str, str]:
    """Versions of the packages that matter to a measurement (dpkg's status file, no chroot): the kernel, the
    file system tools and the workload's own."""
    wanted = {"linux-image-amd64", "e2fsprogs", "xfsprogs", "btrfs-progs", *image.packages}
    found = {}
    with contextlib.suppress(OSError):
        for stanza in (tree / "var/lib/dpkg/status").read_text().split("\n\n"):
            fields = dict(ln.split(": ", 1) for ln in stanza.splitlines() if ": " in ln and not ln.startswith(" "))
            if fields.get("Package") in wanted and fields.get("Status", "").endswith("installed"):
                found[fields["Package"]] = fields.get("Version", "")
    return found
