"""A kubeconfig user's exec credential plugin (stack/kube/credentials.py): run as kubectl runs it, its credential
kept until it expires, asked again after a 401, and its own error shown when it fails."""

import json
import os
import stat
import sys
import time

import pytest
import yaml

from strata.core.errors import StrataError
from strata.stack.runtimes.kubernetes import cluster

V1 = "client.authentication.k8s.io/v1"


def script(tmp_path, body: str, name: str = "plugin") -> str:
    """An executable Python script: the plugin."""
    f = tmp_path / name
    f.write_text(f"#!{sys.executable}\nimport json, os, sys, time\n{body}\n")
    f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return str(f)


def kubeconfig(tmp_path, exec_spec: dict, cluster_extra: dict | None = None) -> str:
    doc = {
        "clusters": [{"name": "c", "cluster": {"server": "https://192.0.2.9:6443", **(cluster_extra or {})}}],
        "users": [{"name": "u", "user": {"exec": exec_spec}}],
        "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "a",
    }
    kc = tmp_path / "config"
    kc.write_text(yaml.safe_dump(doc))
    return str(kc)


TOKEN_PLUGIN = """
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
calls = os.environ["CALLS"]
open(calls, "a").write(json.dumps({"info": info, "args": sys.argv[1:], "mode": os.environ.get("MODE")}) + "\\n")
n = sum(1 for _ in open(calls))
expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + float(os.environ.get("TTL", "3600"))))
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential",
                  "status": {"token": f"token-{n}", "expirationTimestamp": expires}}))
"""


def test_a_plugins_token_is_used_kept_and_asked_again_once_it_expires(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    calls = tmp_path / "calls"
    spec = {
        "apiVersion": V1,
        "command": script(tmp_path, TOKEN_PLUGIN),
        "args": ["get-token", "--cluster", "c"],
        "env": [{"name": "CALLS", "value": str(calls)}, {"name": "MODE", "value": "x"}],
        "interactiveMode": "Never",
        "provideClusterInfo": True,
    }
    api = cluster.connect(kubeconfig(tmp_path, spec)).api
    assert api.plugin is not None
    c = api.plugin.credential()
    assert c.token == "token-1" and c.expires > time.time() + 3000
    assert api.plugin.credential().token == "token-1"  # kept: not expired
    (seen,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert seen["args"] == ["get-token", "--cluster", "c"] and seen["mode"] == "x"
    assert seen["info"]["kind"] == "ExecCredential" and seen["info"]["spec"]["interactive"] is False
    assert seen["info"]["spec"]["cluster"]["server"] == "https://192.0.2.9:6443"
    assert api.plugin.credential(now=c.expires - 10).token == "token-2"  # within EARLY_S of its end: asked again


def test_the_api_sends_the_plugins_token_and_asks_again_after_a_401(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    api = cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": script(tmp_path, TOKEN_PLUGIN)})).api
    sent = []

    class Answer:
        def __init__(self, body):
            self.body = body

        def read(self):
            return self.body

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    def urlopen(req, context=None, timeout=None):
        token = req.get_header("Authorization")
        sent.append(token)
        if token == "Bearer token-1":  # the first token is refused, as an expired one would be
            import io
            import urllib.error

            raise urllib.error.HTTPError(req.full_url, 401, "Unauthorized", {}, io.BytesIO(b"expired"))
        return Answer(b'{"kind": "Namespace"}')

    monkeypatch.setattr("urllib.request.urlopen", urlopen)
    assert api.get("/api/v1/namespaces/x") == {"kind": "Namespace"}
    assert sent == ["Bearer token-1", "Bearer token-2"]


def test_a_plugin_that_fails_shows_its_own_words(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    failing = script(tmp_path, 'print("error: you must be logged in to the server (run: cloud login)", file=sys.stderr)'
                     "\nsys.exit(3)")  # fmt: skip
    api = cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": failing})).api
    with pytest.raises(StrataError, match=r"exited 3: error: you must be logged in to the server \(run: cloud login\)"):
        api.get("/api/v1/nodes")


def test_what_a_plugin_must_be_is_said_before_it_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    cases = [
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}, "v1alpha1 was removed"),
        ({"apiVersion": V1}, "has no command"),
        ({"apiVersion": V1, "command": "x", "interactiveMode": "Always"}, "asks for a terminal"),
    ]
    for spec, said in cases:
        with pytest.raises(StrataError, match=said):
            cluster.connect(kubeconfig(tmp_path, spec))
    missing = {"apiVersion": V1, "command": "strata-no-such-plugin", "installHint": "apt-get install the-plugin"}
    api = cluster.connect(kubeconfig(tmp_path, missing)).api
    with pytest.raises(StrataError) as e:
        api.get("/")
    assert "was not found" in str(e.value) and "apt-get install the-plugin" in e.value.fix


def test_answers_strata_cannot_read_are_refused_with_what_was_wrong(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    bad = [
        ('print("not json")', "cannot read"),
        ('print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential"}))',
         "was asked for"),
        ('print(json.dumps({"apiVersion": "%s", "kind": "ExecCredential", "status": {}}))' % V1, "neither a token"),
        ('print(json.dumps({"apiVersion": "%s", "kind": "ExecCredential", "status": {"token": "t", '
         '"expirationTimestamp": "soon"}}))' % V1, "not an RFC 3339 time"),
    ]  # fmt: skip
    for i, (body, said) in enumerate(bad):
        api = cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": script(tmp_path, body, f"p{i}")})).api
        with pytest.raises(StrataError, match=said):
            api.plugin.run()


def test_a_plugin_may_give_a_client_certificate_kept_private(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    body = (
        'print(json.dumps({"apiVersion": "%s", "kind": "ExecCredential", '
        '"status": {"clientCertificateData": "CERT PEM", "clientKeyData": "KEY PEM"}}))' % V1
    )
    api = cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": script(tmp_path, body)})).api
    c = api.plugin.run()
    assert open(c.cert).read() == "CERT PEM" and open(c.key).read() == "KEY PEM" and c.expires is None
    assert os.stat(c.key).st_mode & 0o777 == 0o600


def test_a_relative_command_is_the_kubeconfigs_neighbour(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_STATE_DIR", str(tmp_path / "state"))
    (tmp_path / "bin").mkdir()
    script(tmp_path / "bin", TOKEN_PLUGIN, "plug")
    api = cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": "./bin/plug"})).api
    assert api.plugin.command == str(tmp_path / "bin" / "plug")
    with pytest.raises(StrataError, match="not found"):
        cluster.connect(kubeconfig(tmp_path, {"apiVersion": V1, "command": "./bin/none"})).api.get("/")
