"""Pushing strata's images to a user's registry (stack/kube/registry.py) against a real one: Debian's
docker-registry on a test host's address, TLS with a CA made here (tests/integration/registry_host.py). A real
image tarball that `scripts/prepare` built (the `tools` image: the null workload's, the smallest) is pushed and
found there with its layers and digest; a second push of the same image is skipped; a push without the CA fails
on the certificate even where skopeo's registries.conf calls the registry insecure; nothing is left afterwards."""

import hashlib
import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from strata.core.errors import StrataError
from strata.core.instances import ImageSpec
from strata.stack.kube import registry
from strata.stack.runtimes.docker.image import image_tag, tarball_path
from tests.coverage import covers

from .helpers import leftovers
from .registry_host import RegistryHost, registry_host

pytestmark = pytest.mark.integration

TOOLS = ImageSpec()  # the image of the null workload and of strata's own tools: the smallest strata builds
PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture
def tarball(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The built tarball; and no proxy for skopeo, whatever this shell holds: it talks to the test host alone."""
    for var in PROXIES:
        monkeypatch.delenv(var, raising=False)
    assert registry.missing() is None, registry.missing()
    path = tarball_path(TOOLS)
    assert path.is_file(), f"{path} is not built: run scripts/prepare"
    return path


def _skopeo(*args: str) -> subprocess.CompletedProcess[str]:
    """The real skopeo (or, given its path first, a wrapper of it)."""
    argv = list(args) if args[0].startswith("/") else ["/usr/bin/skopeo", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _cert_dir(reg: RegistryHost, tmp_path: Path) -> str:
    d = tmp_path / "certs"
    d.mkdir(exist_ok=True)
    (d / "ca.crt").write_bytes(reg.ca_file.read_bytes())
    return str(d)


def _listeners(reg: RegistryHost) -> tuple[list[str], list[str]]:
    """(TCP listeners in the test host's namespace, docker-registry's listeners in this one)."""
    inside = subprocess.run(["nsenter", f"--net=/run/netns/{reg.netns}", "ss", "-ltnH"], capture_output=True, text=True)
    here = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout.splitlines()
    return [line.split()[3] for line in inside.stdout.splitlines()], [ln for ln in here if "docker-registry" in ln]


def _local(tar_path: Path) -> tuple[str, int]:
    """The image's config digest and its number of layers, from the tarball's own manifest."""
    with tarfile.open(tar_path) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        manifest = json.load(member)[0]
        config = tar.extractfile(manifest["Config"])
        assert config is not None
        return "sha256:" + hashlib.sha256(config.read()).hexdigest(), len(manifest["Layers"])


def _gone(reg: RegistryHost) -> list[str]:
    """What of the test host is still here (empty: nothing)."""
    left = leftovers(reg.root)
    left += [f"netns {reg.netns}"] if Path(f"/run/netns/{reg.netns}").exists() else []
    left += [f"link {reg.host_if}"] if Path(f"/sys/class/net/{reg.host_if}").exists() else []
    left += [f"process {reg.pid}"] if Path(f"/proc/{reg.pid}").exists() else []
    return left + ([f"files {reg.root}"] if reg.root.exists() else [])


@covers()
def test_a_real_image_is_pushed_over_verified_tls_and_is_there(tmp_path: Path, tarball: Path) -> None:
    with registry_host(tmp_path) as reg:
        assert _listeners(reg) == ([f"{reg.addr}:{reg.port}"], [])  # its one listener, on the test host only
        ref = registry.reference(reg.prefix, image_tag(TOOLS))
        assert ref == f"{reg.addr}:5000/strata/{image_tag(TOOLS)}"
        pushed = registry.push(tarball, ref, ca_file=str(reg.ca_file))
        name, _, digest = pushed.partition("@")
        assert name == ref and digest.startswith("sha256:") and len(digest) == 71
        certs = _cert_dir(reg, tmp_path)
        shown = _skopeo("inspect", "--tls-verify=true", "--cert-dir", certs, f"docker://{ref}")
        assert shown.returncode == 0, shown.stderr
        info = json.loads(shown.stdout)
        config, layers = _local(tarball)
        assert info["Digest"] == digest and info["RepoTags"] == [image_tag(TOOLS).split(":")[1]]
        assert len(info["Layers"]) == layers and all(x.startswith("sha256:") for x in info["Layers"])
        raw = _skopeo("inspect", "--raw", "--tls-verify=true", "--cert-dir", certs, f"docker://{ref}")
        assert json.loads(raw.stdout)["config"]["digest"] == config  # the very image: its config copied unchanged
        assert registry.push(tarball, ref, ca_file=str(reg.ca_file)) == pushed  # the same image again: skipped
        puts = [ln for ln in reg.log.read_text().splitlines() if '"PUT /v2/strata/' in ln and "/manifests/" in ln]
        assert len(puts) == 1, puts
    assert _gone(reg) == []


@covers()
def test_a_push_without_the_ca_fails_on_the_certificate_even_where_the_registry_is_called_insecure(
    tmp_path: Path, tarball: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with registry_host(tmp_path) as reg:
        conf = tmp_path / "registries.conf"  # what would turn verification off were it left to the configuration
        conf.write_text(f'[[registry]]\nlocation = "{reg.addr}:{reg.port}"\ninsecure = true\n')
        wrapper = tmp_path / "bin" / "skopeo"  # the real skopeo, configured so (it reads no env var for this file)
        wrapper.parent.mkdir()
        wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/skopeo --registries-conf {conf} "$@"\n')
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
        ref = registry.reference(reg.prefix, image_tag(TOOLS))
        # the premise: left to that configuration, skopeo does not verify (it reaches the API and hears "no such
        # image" from the registry itself, where the push below is refused on the certificate)
        unverified = _skopeo(str(wrapper), "inspect", "--raw", f"docker://{ref}")
        assert "manifest unknown" in unverified.stderr, unverified.stderr
        with pytest.raises(StrataError) as e:
            registry.push(tarball, ref)
        assert "x509: certificate signed by unknown authority" in e.value.problem, e.value.problem
        assert ref in e.value.problem and "CA certificate" in e.value.fix
        assert "TLS handshake error" in reg.log.read_text()  # it reached the registry, and the client refused it
        absent = _skopeo("inspect", "--tls-verify=true", "--cert-dir", _cert_dir(reg, tmp_path), f"docker://{ref}")
        assert absent.returncode != 0 and "manifest unknown" in absent.stderr, absent.stderr  # nothing was pushed
    assert _gone(reg) == []
