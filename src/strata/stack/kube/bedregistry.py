"""A test bed's own image registry (`strata testbed kubernetes up --nodes N --registry`): a test host on the bed's
bridge, serving Debian's `docker-registry` (the distribution registry 2.8) over TLS with a certificate signed by
the bed's own CA.

Its nodes pull strata's images from it (their containerd trusts it by that CA, config.containerd_config), and
strata pushes there from this machine over the bridge (stack/kube/registry.py, `images:` the bed's `prefix`), as
a user's cluster pulls from the user's registry. It listens on its namespace's address only: one listener
(`http.addr`), no debug server, no proxy, no notifications, and PATH as its whole environment, since a
`REGISTRY_*` variable would override the file. Journaled as the bed's other processes and namespaces are.
"""

from __future__ import annotations

import secrets
import ssl
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject

from .procs import Processes

REGISTRY = "/usr/bin/docker-registry"
PORT = 5000
READY_TIMEOUT_S = 60
PREFIX_PATH = "strata"


def config(addr: str, port: int, root: Path, cert: Path, key: Path) -> JsonObject:
    """docker-registry's configuration: filesystem storage under `root`, one TLS listener on addr:port."""
    return {
        "version": 0.1,
        "log": {"level": "info", "fields": {"service": "registry"}},
        "storage": {"filesystem": {"rootdirectory": str(root)}, "maintenance": {"uploadpurging": {"enabled": False}}},
        "http": {
            "addr": f"{addr}:{port}",
            "net": "tcp",
            "secret": secrets.token_hex(16),
            "tls": {"certificate": str(cert), "key": str(key)},
        },
    }


def answers(url: str, ca_file: Path) -> bool:
    """Whether the registry's API root answers over TLS verified with `ca_file` (no proxy, whatever the env)."""
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=ca_file))
    )
    try:
        with opener.open(url, timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(procs: Processes, netns_name: str, addr: str, root: Path, pki: Path) -> JsonObject:
    """The registry in its namespace, its data under `root`; once it answers, its facts: the address, the
    `images:` prefix on it, and the CA file that verifies it."""
    if not Path(REGISTRY).exists():
        raise StrataError(f"{REGISTRY} is missing", "apt-get install docker-registry (scripts/install does)")
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "config.yml"
    conf.write_text(yaml.safe_dump(config(addr, PORT, root / "data", pki / "registry.crt", pki / "registry.key")))
    argv = ["nsenter", f"--net=/run/netns/{netns_name}", REGISTRY, "serve", str(conf)]
    procs.start("registry", argv, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    url, ca = f"https://{addr}:{PORT}/v2/", pki / "ca.crt"
    procs.wait_until(f"the bed's registry did not answer at {url}", lambda: answers(url, ca), "registry")
    return {"address": addr, "port": PORT, "prefix": f"{addr}:{PORT}/{PREFIX_PATH}", "ca": str(ca)}
