"""A kubeconfig user's exec credential plugin (`users[].user.exec`), as kubectl runs it.

EKS, GKE and AKS hand out kubeconfigs whose user is a command (`aws eks get-token`, `gke-gcloud-auth-plugin`,
`kubelogin`) that prints an `ExecCredential` (client.authentication.k8s.io, v1 or v1beta1): a bearer token, or
a client certificate and key, and when they expire. strata runs the command as kubectl does
(https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins): its
`args` and `env` on top of strata's own environment, `KUBERNETES_EXEC_INFO` holding the request (never
interactive: strata has no terminal to give it; `provideClusterInfo` adds the cluster), a command with a `/`
relative to the kubeconfig's directory. Its credential is kept until `expirationTimestamp` (less a margin) and
asked again after it, or when the API answers 401. A plugin that fails stops strata with the plugin's own
words (its stderr) and its `installHint` when the command is missing; an answer of another apiVersion, or
one with no credential, is refused with what was wrong.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonObject, ShapeError, arr, as_obj, obj, text

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
RUN_TIMEOUT_S = 60
EARLY_S = 30.0  # a credential is asked again this long before it expires
MAX_OUTPUT_BYTES = 1 << 20


@dataclass
class Credential:
    """What a plugin gave: a token, or a client certificate and key (as files), and when it expires (epoch s)."""

    token: str | None = None
    cert: str | None = None
    key: str | None = None
    expires: float | None = None

    def fresh(self, now: float) -> bool:
        return self.expires is None or now < self.expires - EARLY_S


@dataclass
class ExecPlugin:
    """`user.exec` of a kubeconfig, read and checked; `run()` asks it for a credential."""

    command: str
    args: list[str]
    env: dict[str, str]
    api_version: str
    install_hint: str
    interactive: str
    cluster: JsonObject | None  # given to the plugin when `provideClusterInfo` is set
    where: str  # the kubeconfig and user, for messages
    private_dir: Path  # where a certificate and key it returns are written (0700)
    cached: Credential | None = field(default=None, repr=False)

    def credential(self, now: float | None = None) -> Credential:
        """The plugin's credential, asked again once it expired."""
        now = time.time() if now is None else now
        if self.cached is None or not self.cached.fresh(now):
            self.cached = self.run()
        return self.cached

    def forget(self) -> None:
        """The API refused the credential (401): the next request asks the plugin again."""
        self.cached = None

    def run(self) -> Credential:
        info: JsonObject = {
            "apiVersion": self.api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False, **({"cluster": self.cluster} if self.cluster is not None else {})},
        }
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": json.dumps(info)}
        try:
            cp = subprocess.run(
                [self.command, *self.args],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=RUN_TIMEOUT_S,
            )
        except FileNotFoundError:
            hint = f": {self.install_hint.strip()}" if self.install_hint.strip() else ""
            raise StrataError(
                f"{self.where}: the credential plugin {self.command!r} was not found",
                f"install it{hint}" if hint else "install it, or put it on PATH",
            )
        except subprocess.TimeoutExpired:
            raise StrataError(
                f"{self.where}: the credential plugin {self.command!r} did not answer in {RUN_TIMEOUT_S} s",
                "run it by hand to see what it waits for (strata runs it without a terminal)",
            )
        except OSError as e:
            raise StrataError(f"{self.where}: the credential plugin {self.command!r} could not run: {e}", "fix it")
        if cp.returncode != 0:
            said = cp.stderr.decode(errors="replace").strip()[-2000:] or cp.stdout.decode(errors="replace")[-500:]
            raise StrataError(
                f"{self.where}: the credential plugin {self.command!r} exited {cp.returncode}: {said}",
                "fix what the plugin says (run it by hand with the same arguments), then run strata again",
            )
        return self._read(cp.stdout[:MAX_OUTPUT_BYTES])

    def _read(self, out: bytes) -> Credential:
        try:
            doc = as_obj(json.loads(out), "its answer")
            if doc.get("kind") != "ExecCredential" or doc.get("apiVersion") != self.api_version:
                raise ShapeError(
                    f"an ExecCredential of {self.api_version} was asked for, not "
                    f"{doc.get('kind')!r} of {doc.get('apiVersion')!r}"
                )
            status = obj(doc, "status")
            token = text(status, "token") or None
            cert, key = text(status, "clientCertificateData") or None, text(status, "clientKeyData") or None
            expires = text(status, "expirationTimestamp") or None
        except (ValueError, ShapeError) as e:
            raise StrataError(
                f"{self.where}: the credential plugin {self.command!r} answered what strata cannot read: {e}",
                "run the plugin by hand: it must print an ExecCredential (client.authentication.k8s.io/v1)",
            )
        if not token and not (cert and key):
            raise StrataError(
                f"{self.where}: the credential plugin {self.command!r} gave neither a token nor a certificate and key",
                "run the plugin by hand and look at its status",
            )
        c = Credential(token=token, expires=_timestamp(expires, self.where) if expires else None)
        if cert and key:
            c.cert, c.key = self._private("crt", cert.encode()), self._private("key", key.encode())
        return c

    def _private(self, kind: str, data: bytes) -> str:
        self.private_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        f = self.private_dir / f"exec-{kind}-{hashlib.sha256(data).hexdigest()[:12]}"
        if not f.exists():
            fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        return str(f)


def _timestamp(value: str, where: str) -> float:
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise StrataError(
            f"{where}: the credential plugin's expirationTimestamp {value[:40]!r} is not an RFC 3339 time",
            "fix the plugin",
        )


def plugin(spec: JsonObject, cluster: JsonObject, kubeconfig: Path, where: str, private_dir: Path) -> ExecPlugin:
    """`user.exec` of a kubeconfig as an ExecPlugin, or why strata cannot run it."""
    api_version = text(spec, "apiVersion")
    if api_version not in API_VERSIONS:
        raise StrataError(
            f"{where}: the credential plugin's apiVersion is {api_version or 'missing'}",
            f"use one of {', '.join(API_VERSIONS)} (v1alpha1 was removed from Kubernetes in 1.24)",
        )
    command = text(spec, "command")
    if not command:
        raise StrataError(f"{where}: the credential plugin has no command", "give `exec.command`")
    if "/" in command and not Path(command).is_absolute():
        command = str(kubeconfig.parent / command)  # kubectl: relative to the kubeconfig's directory
    elif "/" not in command:
        command = shutil.which(command) or command
    interactive = text(spec, "interactiveMode") or ("IfAvailable" if api_version.endswith("v1beta1") else "")
    if interactive == "Always":
        raise StrataError(
            f"{where}: the credential plugin asks for a terminal (interactiveMode: Always)",
            "run strata with a kubeconfig whose plugin runs without one (interactiveMode: Never or IfAvailable), "
            "or a token",
        )
    env = {}
    for e in map(as_obj, arr(spec, "env")):
        env[text(e, "name")] = text(e, "value")
    args = [str(a) for a in arr(spec, "args")]
    info: JsonObject | None = None
    if spec.get("provideClusterInfo"):
        info = {"server": text(cluster, "server")}
        if cluster.get("certificate-authority-data"):
            info["certificate-authority-data"] = text(cluster, "certificate-authority-data")
        elif cluster.get("certificate-authority"):
            ca = Path(text(cluster, "certificate-authority")).expanduser()
            ca = ca if ca.is_absolute() else kubeconfig.parent / ca
            try:
                info["certificate-authority-data"] = base64.b64encode(ca.read_bytes()).decode()
            except OSError:
                pass
    return ExecPlugin(command, args, env, api_version, text(spec, "installHint"), interactive, info, where, private_dir)
