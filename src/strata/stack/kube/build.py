"""The Kubernetes binaries of the test bed, built here from the Go module proxy and cached.

`kube` is one binary holding kube-apiserver, kube-controller-manager,
kube-scheduler and kubelet (go/main.go dispatches on its first argument, as
hyperkube once did), so the shared packages are compiled and linked once;
`pause` is the pods' sandbox process. Both come from the wrapper module in
go/, whose go.mod requires k8s.io/kubernetes at KUBERNETES_VERSION and
replaces each of its staging modules (which the module zip leaves out) by the
published k8s.io/NAME at the matching v0 version.

The result is cached under $STRATA_CACHE_DIR/kubernetes/<version>/ (else
/var/cache/strata), with the Go build cache beside it: a fresh machine builds
once (measured here, cold on 2 shared cores: see docs/kubernetes.md).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Callable

from strata.core.errors import StrataError

from .config import KUBERNETES_VERSION

GO_DIR = Path(__file__).parent / "go"
GO_CANDIDATES = ("/usr/local/go/bin/go", "/usr/lib/go/bin/go")
BUILD_TIMEOUT_S = 3600
# the staging modules of k8s.io/kubernetes (its go.mod's replace lines), each published as k8s.io/NAME v0.X.Y
STAGING = (
    "api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider cluster-bootstrap "
    "code-generator component-base component-helpers controller-manager cri-api cri-client csi-translation-lib "
    "dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy "
    "kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin "
    "sample-controller"
).split()


VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")


def cache_dir(version: str = KUBERNETES_VERSION) -> Path:
    return Path(os.environ.get("STRATA_CACHE_DIR", "/var/cache/strata")) / "kubernetes" / version


def go_mod(version: str = KUBERNETES_VERSION) -> str:
    """The wrapper module's go.mod for k8s.io/kubernetes `version` (v1.X.Y; staging modules at v0.X.Y)."""
    staging = "v0." + version.removeprefix("v1.")
    lines = ["module strata/kube", "", "go 1.24.0", "", f"require k8s.io/kubernetes {version}", "", "replace ("]
    lines += [f"\tk8s.io/{name} => k8s.io/{name} {staging}" for name in STAGING]
    return "\n".join([*lines, ")", ""])


def ldflags(version: str) -> str:
    """Stripped, and stamped with the version as Kubernetes' own build does (nodes report it)."""
    major, minor = version.removeprefix("v").split(".")[:2]
    stamps = [
        f"{pkg}.{k}={v}"
        for pkg in VERSION_PACKAGES
        for k, v in (("gitVersion", version), ("gitMajor", major), ("gitMinor", minor), ("gitTreeState", "clean"))
    ]
    return " ".join(["-s", "-w", *(f"-X {s}" for s in stamps)])


def go_binary() -> str:
    for candidate in (shutil.which("go"), *GO_CANDIDATES):
        if candidate and Path(candidate).exists():
            return candidate
    raise StrataError("no Go toolchain (go) found", "install Go >= 1.24 (scripts/install puts it in /usr/local/go)")


def binaries_built(version: str = KUBERNETES_VERSION) -> bool:
    out = cache_dir(version) / "bin"
    return (out / "kube").exists() and (out / "pause").exists()


def binaries(version: str = KUBERNETES_VERSION, log: Callable[[str], None] = print) -> tuple[Path, Path]:
    """(kube, pause) for `version`, built once per machine and version."""
    out = cache_dir(version) / "bin"
    kube, pause = out / "kube", out / "pause"
    if kube.exists() and pause.exists():
        return kube, pause
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run waits, then finds the binaries
        if not (kube.exists() and pause.exists()):
            _build(version, out, log)
    return kube, pause


def _build(version: str, out: Path, log: Callable[[str], None]) -> None:
    src = cache_dir(version) / "src"
    shutil.rmtree(src, ignore_errors=True)
    (src / "pause").mkdir(parents=True)
    shutil.copy(GO_DIR / "main.go", src / "main.go")
    shutil.copy(GO_DIR / "pause" / "main.go", src / "pause" / "main.go")
    (src / "go.mod").write_text(go_mod(version))
    env = {
        **os.environ,
        "GOCACHE": str(cache_dir(version) / "gocache"),
        "GOFLAGS": "-buildvcs=false -trimpath",
    }
    go = go_binary()
    tmp = out.with_name("bin.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"building Kubernetes {version} (kube-apiserver, kube-controller-manager, kube-scheduler, kubelet) once")
    t0 = time.monotonic()
    for argv in ([go, "mod", "tidy"], [go, "build", f"-ldflags={ldflags(version)}", "-o", f"{tmp}/", ".", "./pause"]):
        try:
            cp = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise StrataError(
                f"`{' '.join(argv)}` did not finish in {BUILD_TIMEOUT_S} s", "build on a less busy machine"
            )
        if cp.returncode != 0:
            raise StrataError(
                f"the Kubernetes {version} build failed: `{' '.join(argv)}`: {cp.stderr.strip()[-2000:]}",
                "check that the Go module proxy is reachable (go env GOPROXY) and Go is >= 1.24",
            )
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    log(f"built Kubernetes {version} in {time.monotonic() - t0:.0f} s into {out}")
