"""A Kubernetes cluster as strata reaches it: its API from a kubeconfig, and what strata makes in it.

Everything strata creates in a cluster is journaled before it exists, with the kubeconfig (and context)
that reaches it, so `strata cleanup` after `kill -9` removes it from the journal alone: the run's
namespace (its pods and claims go with it) and the cluster-scoped PersistentVolumes of `local` paths.
A user's kubeconfig may hold its credentials inline (`*-data`, base64) or as files, a bearer token (or its
file), or an exec credential plugin (stack/kube/credentials.py: EKS's, GKE's, AKS's); inline ones and a plugin's
certificate are written to a private directory (0700) under the state dir for the TLS context.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import yaml

from strata.core.errors import StrataError
from strata.core.jsondoc import JsonArray, JsonObject, ShapeError, arr, as_obj, flag, obj, text
from strata.stack.journal import Journal, Undos, need, state_dir
from strata.stack.kube.api import Api, ApiError
from strata.stack.kube.credentials import plugin

DELETE_TIMEOUT_S = 180


@dataclass
class Cluster:
    api: Api
    kubeconfig: str
    context: str | None
    own: bool  # strata's own test bed (it goes with the run) or the user's cluster (left as it was)

    def where(self) -> dict[str, str | bool]:
        return {"kubeconfig": self.kubeconfig, "context": self.context or "", "own": self.own}


def _select(items: JsonArray, name: str | None, what: str, path: str) -> JsonObject:
    kind = what.rstrip("s")
    by = {i.get("name"): obj(i, kind) for i in map(as_obj, items)}
    if name not in by:
        raise StrataError(f"{path}: no {kind} named {name!r} (it has: {', '.join(map(str, by))})")
    return by[name]


def _material(entry: JsonObject, key: str, base: Path, kubeconfig: Path) -> str | None:
    """A credential as a file path: `key` (a file, relative to the kubeconfig) or `key-data` (inline)."""
    if entry.get(f"{key}-data"):
        data = base64.b64decode(text(entry, f"{key}-data"))
        base.mkdir(mode=0o700, parents=True, exist_ok=True)
        f = base / f"{key}-{hashlib.sha256(data).hexdigest()[:12]}"
        if not f.exists():
            fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
        return str(f)
    if entry.get(key):
        p = Path(text(entry, key)).expanduser()
        return str(p if p.is_absolute() else kubeconfig.parent / p)
    return None


def connect(kubeconfig: str, context: str | None = None, own: bool = False) -> Cluster:
    """The API of a kubeconfig's context (its current one by default)."""
    path = Path(kubeconfig).expanduser()
    try:
        doc = as_obj(yaml.safe_load(path.read_text()) or {}, "the kubeconfig")
    except (OSError, yaml.YAMLError, ShapeError) as e:
        raise StrataError(f"cannot read the kubeconfig {path}: {e}", "give `kubeconfig:` a readable file")
    try:
        return _connect(doc, path, context, own)
    except ShapeError as e:  # a member of another type than kubectl's (a list where an object goes)
        raise StrataError(f"cannot read the kubeconfig {path}: {e}", "give `kubeconfig:` a kubeconfig kubectl reads")


def _connect(doc: JsonObject, path: Path, context: str | None, own: bool) -> Cluster:
    ctx_name = context or text(doc, "current-context") or None
    ctx = _select(arr(doc, "contexts"), ctx_name, "contexts", str(path))
    cluster = _select(arr(doc, "clusters"), text(ctx, "cluster") or None, "clusters", str(path))
    user = _select(arr(doc, "users"), text(ctx, "user"), "users", str(path)) if ctx.get("user") else {}
    base = state_dir() / "kube-credentials"
    if cluster.get("insecure-skip-tls-verify"):
        raise StrataError(
            f"{path}: the cluster {ctx.get('cluster')} skips TLS verification",
            "give the kubeconfig the cluster's certificate-authority",
        )
    if user.get("auth-provider"):
        raise StrataError(
            f"{path}: the user {ctx.get('user')} authenticates through an auth-provider (removed from kubectl in "
            "Kubernetes 1.26)",
            "give strata a kubeconfig whose user is an exec plugin, a client certificate or a token "
            "(docs/kubernetes.md: your cluster)",
        )
    token = text(user, "token") or None
    if not token and user.get("tokenFile"):
        token_file = Path(text(user, "tokenFile")).expanduser()
        token_file = token_file if token_file.is_absolute() else path.parent / token_file
        try:
            token = token_file.read_text().strip()
        except OSError as e:
            raise StrataError(f"{path}: cannot read the user's tokenFile {token_file}: {e}", "fix the kubeconfig")
    where = f"{path} (user {ctx.get('user')})"
    exec_plugin = plugin(obj(user, "exec"), cluster, path, where, base) if user.get("exec") else None
    api = Api(
        text(cluster, "server"),
        _material(cluster, "certificate-authority", base, path),
        _material(user, "client-certificate", base, path),
        _material(user, "client-key", base, path),
        token,
        exec_plugin,
    )
    return Cluster(api, str(path), ctx_name, own)


def _reach(data: JsonObject) -> Cluster | None:
    """The cluster a journal entry names, or None when it no longer answers."""
    with contextlib.suppress(StrataError, OSError):
        c = connect(need(data, "kubeconfig"), text(data, "context") or None, flag(data, "own"))
        if c.api.answers():
            return c
    return None


def delete_and_wait(api: Api, path: str, timeout_s: float = DELETE_TIMEOUT_S) -> None:
    """DELETE `path` (gone already is fine; a pod without its grace period) and wait until it is gone."""
    try:
        api.delete(path + ("?gracePeriodSeconds=0" if "/pods/" in path else ""))
    except ApiError as e:
        if e.status != 404:
            raise
    api.wait(f"{path} was not deleted", lambda: api.gone(path), timeout_s, "look at the cluster's events")


def _gone_with(data: JsonObject, what: str) -> str:
    if data.get("own"):
        return f"the test bed does not answer: {what} went with it"
    raise StrataError(
        f"the cluster of {data['kubeconfig']} does not answer: {what} may remain",
        "run `strata cleanup` again once it answers (or delete it with kubectl)",
    )


def _undo_namespace(data: JsonObject) -> str | None:
    name = need(data, "name")
    c = _reach(data)
    if c is None:
        return _gone_with(data, f"namespace {name}")
    delete_and_wait(c.api, f"/api/v1/namespaces/{name}")
    return None


def _undo_object(data: JsonObject) -> str | None:
    path = need(data, "path")
    c = _reach(data)
    if c is None:
        return _gone_with(data, path)
    delete_and_wait(c.api, path)
    return None


@contextlib.contextmanager
def namespace(cluster: Cluster, name: str, journal: Journal) -> Iterator[str]:
    """The run's namespace (journaled first); deleted with everything in it at the end."""
    data = {"name": name, **cluster.where()}
    seq = journal.intent("kube-namespace", **data)
    try:
        cluster.api.post(
            "/api/v1/namespaces",
            {
                "metadata": {
                    "name": name,
                    "labels": {
                        "app.kubernetes.io/managed-by": "strata",
                        "pod-security.kubernetes.io/enforce": "privileged",
                    },
                }
            },
        )

        def account() -> bool:  # pods are admitted only once the namespace's service account exists
            return bool(cluster.api.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"))

        cluster.api.wait(f"namespace {name} got no service account", account, 60, "look at the controller-manager")
        yield name
    finally:
        with contextlib.suppress(ApiError, OSError, StrataError):
            delete_and_wait(cluster.api, f"/api/v1/namespaces/{name}")
            journal.release(seq)


def intent(cluster: Cluster, journal: Journal, path: str) -> int:
    """Journal an object before it is created (a pod, a claim, a volume): `strata cleanup` deletes it.
    Objects are journaled in the order they are made, so the users go first: pods, then their claims,
    then the volumes bound to those claims (a bound volume is not deleted while its claim is in use)."""
    return journal.intent("kube-object", path=path, **cluster.where())


@contextlib.contextmanager
def cluster_object(cluster: Cluster, journal: Journal, collection: str, body: JsonObject) -> Iterator[str]:
    """An object (a PersistentVolume, a claim), journaled first, deleted at the end."""
    path = f"{collection}/{text(obj(body, 'metadata'), 'name')}"
    seq = intent(cluster, journal, path)
    try:
        cluster.api.post(collection, body)
        yield path
    finally:
        with contextlib.suppress(ApiError, OSError, StrataError):
            delete_and_wait(cluster.api, path, 120)
            journal.release(seq)


def wait_phase(api: Api, path: str, phases: tuple[str, ...], timeout_s: float, what: str) -> JsonObject:
    """GET `path` until its status.phase is one of `phases`; the object."""
    deadline = time.monotonic() + timeout_s
    got: JsonObject = {}
    while time.monotonic() < deadline:
        got = api.get(path)
        if obj(got, "status").get("phase") in phases:
            return got
        time.sleep(0.25)
    raise StrataError(
        f"{what}: still {text(obj(got, 'status'), 'phase', 'unknown')} after {timeout_s:.0f} s",
        "look at the cluster's events (kubectl get events)",
    )


# The undo action of each kind this module journals (declared by the plugins that use it: stack/journal.py Undoing).
UNDO: Undos = {
    "kube-namespace": _undo_namespace,
    "kube-object": _undo_object,
}
