"""A real image registry on a test host, for the tests of pushing strata's images (stack/kube/registry.py).

Debian's `docker-registry` (the distribution registry 2.8) serves TLS with a certificate signed by a CA made
here (stack/kube/pki.py), on the address of a network namespace made as strata makes its test hosts
(stack/netns.py `namespace_host`: a free /30 of 192.0.2.0/24 picked under the allocation lock, never an
address the machine uses, journaled before it exists, here in a journal under the helper's own directory).

The registry listens on that address only: its config has one listener (`http.addr`), no debug server (the
optional `http.debug` is left out), no proxy, no notifications; it starts with PATH as its whole environment,
since a `REGISTRY_*` variable would override the file (its configuration.md, "Override specific configuration
options"). It runs under `nsenter --net=` (never `ip netns exec`, which remounts /sys: docs/host-notes.md).
On exit it is stopped by its PID, then the namespace and its link go, then its files.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from strata.stack import netns
from strata.stack.journal import Journal
from strata.stack.kube.bedregistry import answers as _answers
from strata.stack.kube.bedregistry import config
from strata.stack.kube.config import CertSpec
from strata.stack.kube.pki import make_all

REGISTRY = "/usr/bin/docker-registry"
PORT = 5000
READY_TIMEOUT_S = 30
STOP_TIMEOUT_S = 10


@dataclass(frozen=True)
class RegistryHost:
    addr: str  # the namespace's address, the registry's only listener
    port: int
    ca_file: Path  # the CA that signed the registry's certificate
    netns: str  # the namespace's name (/run/netns/NAME)
    host_if: str  # the link's end on this machine
    pid: int  # the registry's process
    log: Path
    root: Path  # everything it made on disk: the CA, the config, the storage, the journal

    @property
    def prefix(self) -> str:
        """An `images:` prefix on this registry."""
        return f"{self.addr}:{self.port}/strata"


def _wait_ready(proc: subprocess.Popen[bytes], url: str, ca_file: Path, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"docker-registry exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        if _answers(url, ca_file):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {READY_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def registry_host(tmp_path: Path) -> Iterator[RegistryHost]:
    """A registry serving https://ADDR:5000 in a namespace of its own; everything it made is gone on exit."""
    root = tmp_path / f"registry-{secrets.token_hex(3)}"
    root.mkdir()
    journal = Journal(f"registry-{root.name}", root / "state")
    try:
        with netns.namespace_host(journal, tag="registry") as host:
            addr, pki, conf = host.link.ns_addr, root / "pki", root / "config.yml"
            make_all(pki, [CertSpec("registry", "strata-test-registry", ips=(addr,), server=True)])
            conf.write_text(
                yaml.safe_dump(config(addr, PORT, root / "data", pki / "registry.crt", pki / "registry.key"))
            )
            log = root / "registry.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    host.argv([REGISTRY, "serve", str(conf)]),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                    start_new_session=True,
                )
            try:
                _wait_ready(proc, f"https://{addr}:{PORT}/v2/", pki / "ca.crt", log)
                yield RegistryHost(addr, PORT, pki / "ca.crt", host.name, host.link.host_if, proc.pid, log, root)
            finally:
                _stop(proc)
    finally:
        journal.close()
        shutil.rmtree(root)
