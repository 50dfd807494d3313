"""stack/kube/registry.py: image names under `images: REGISTRY/PREFIX`, and the skopeo commands that push a
`docker save` tarball there (a fake skopeo on PATH records each call: its arguments, the certificates in its
cert dir, its auth file)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import sys
import tarfile
from pathlib import Path
from typing import Any, Callable

import pytest

from strata.core.errors import StrataError
from strata.stack.kube import registry
from strata.stack.kube.images import pause_tarball

Call = dict[str, Any]  # one run of the fake skopeo: its argv, the files in its cert dir, its auth file
Calls = Callable[[], list[Call]]
REF = "registry.example:5000/team/strata/strata-fio:a7d9b920631e"
CA = "-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"
# skopeo 1.9.3's own last line when the registry's CA was not given (captured here against docker-registry 2.8.2)
X509 = (
    'time="2026-12-07T08:58:50Z" level=fatal msg="trying to reuse blob sha256:45e5a51b0ace4f4bb485bb349a6a36678378ba'
    "36d2584ee35f68f5d6f09c5083 at destination: pinging container registry 192.0.2.250:5000: Get "
    '\\"https://192.0.2.250:5000/v2/\\": x509: certificate signed by unknown authority"'
)
FAKE = r"""#!PYTHON
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
call = {"argv": args}
for flag in ("--cert-dir", "--dest-cert-dir"):
    if flag in args:
        d = Path(args[args.index(flag) + 1])
        call["certs"] = {p.name: p.read_text() for p in d.iterdir()}
for flag in ("--authfile", "--dest-authfile"):
    if flag in args:
        call["auth"] = Path(args[args.index(flag) + 1]).read_text()
with open(os.environ["FAKE_SKOPEO_LOG"], "a") as f:
    f.write(json.dumps(call) + "\n")
if args[0] == "inspect":
    if os.environ.get("FAKE_SKOPEO_HELD"):
        sys.stdout.write(json.dumps({"schemaVersion": 2, "config": {"digest": os.environ["FAKE_SKOPEO_HELD"]}}))
        sys.exit(0)
    sys.stderr.write('time="x" level=fatal msg="Error reading manifest: manifest unknown"\n')
    sys.exit(1)
if os.environ.get("FAKE_SKOPEO_FAIL"):
    sys.stderr.write("Copying blob sha256:0000\n" + os.environ["FAKE_SKOPEO_FAIL"] + "\n")
    sys.exit(1)
Path(args[args.index("--digestfile") + 1]).write_text("sha256:" + "ab" * 32)
"""


@pytest.fixture
def skopeo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Calls:
    """The fake skopeo first on PATH; returns a function reading back its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "skopeo"
    fake.write_text(FAKE.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SKOPEO_LOG", str(log))
    return lambda: [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def tarball(tmp_path: Path) -> Path:
    """A real `docker save`-format tarball of one small image (the test bed's pause image, from any file)."""
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    return pause_tarball(binary, tmp_path / "image.tar")


@pytest.fixture
def ca(tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    path.write_text(CA)
    return str(path)


def _config_digest(path: Path) -> str:
    """The image's config digest, read from the tarball here as a registry would see it."""
    with tarfile.open(path) as tar:
        manifest = tar.extractfile("manifest.json")
        assert manifest is not None
        config = tar.extractfile(json.load(manifest)[0]["Config"])
        assert config is not None
        return "sha256:" + hashlib.sha256(config.read()).hexdigest()


def _never_verify_off(calls: list[Call]) -> None:
    for call in calls:
        assert not [a for a in call["argv"] if "tls-verify" in a and not a.endswith("tls-verify=true")], call["argv"]
        assert any(a.endswith("tls-verify=true") for a in call["argv"]), call["argv"]


# ---- names -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix, image, expected",
    [
        ("registry.example:5000/team/strata", "strata-fio:a7d9b920631e", REF),
        ("localhost/strata", "strata-fio:1", "localhost/strata/strata-fio:1"),
        ("localhost:5000/a/b", "strata-tools:19706dac79da", "localhost:5000/a/b/strata-tools:19706dac79da"),
        ("192.0.2.10:5000/strata", "strata-fio:1", "192.0.2.10:5000/strata/strata-fio:1"),
        ("reg.example/strata/", "strata-fio:1", "reg.example/strata/strata-fio:1"),  # one trailing slash is dropped
        ("Reg.Example/x_y.z__w--v", "strata-fio:1", "Reg.Example/x_y.z__w--v/strata-fio:1"),  # a host's case is free
        ("reg.example/strata", "strata.local/pause:1", "reg.example/strata/strata.local/pause:1"),
    ],
)
def test_reference_names_strata_s_image_under_the_prefix(prefix: str, image: str, expected: str) -> None:
    assert registry.reference(prefix, image) == expected
    host, path = registry.parse_prefix(prefix)
    assert expected.startswith(f"{host}/{path}/")


@pytest.mark.parametrize(
    "prefix, said",
    [
        ("", "empty"),
        ("reg.example", "no path"),
        ("reg.example/", "no path"),
        ("team/strata", "Docker Hub"),
        ("strata", "no path"),
        ("https://reg.example/strata", "scheme"),
        ("reg.example:0/strata", "port '0'"),
        ("reg.example:65536/strata", "port '65536'"),
        ("reg.example:50a/strata", "port '50a'"),
        ("reg.example:/strata", "port ''"),
        ("reg.example/Team", "'Team'"),
        ("reg.example/a//b", "''"),
        ("reg.example/-a", "'-a'"),
        ("reg.example/a.", "'a.'"),
        ("reg.example/a___b", "'a___b'"),
        ("reg.example/strata:1", "'strata:1'"),
        ("reg.example/strata@sha256:00", "'strata@sha256"),
        ("[::1]:5000/strata", "not a host name"),
        ("reg..example/strata", "not a host name"),
        ("-reg.example/strata", "not a host name"),
        ("reg_x.example/strata", "not a host name"),
        (f"{'a' * 64}.example/strata", "not a host name"),
        ("reg.example/stra ta", "'stra ta'"),
        ("reg.example/str\u00e9ta", "'str\u00e9ta'"),
        ("reg.example/strata\n", "'strata\\n'"),
    ],
)
def test_a_bad_prefix_is_refused_with_what_is_wrong_and_the_form_to_write(prefix: str, said: str) -> None:
    with pytest.raises(StrataError) as e:
        registry.parse_prefix(prefix)
    assert said in e.value.problem
    assert "REGISTRY[:PORT]/PATH" in e.value.fix
    with pytest.raises(StrataError):
        registry.reference(prefix, "strata-fio:1")


def test_names_are_bounded_as_the_registry_bounds_them() -> None:
    at_limit = "reg.example/" + "a" * (registry.NAME_MAX - len("reg.example/"))
    assert registry.parse_prefix(at_limit) == ("reg.example", "a" * (registry.NAME_MAX - 12))
    with pytest.raises(StrataError, match="256 characters"):
        registry.parse_prefix(at_limit + "a")
    with pytest.raises(StrataError, match=f"over {registry.NAME_MAX}"):
        registry.reference(at_limit, "strata-fio:1")  # the image's name takes it over
    assert registry.parse_prefix(f"{'a' * 63}.example/x")[0] == f"{'a' * 63}.example"
    with pytest.raises(StrataError, match="characters"):
        registry.parse_prefix("reg.example/" + "a" * 10**6)  # refused before any pattern runs


@pytest.mark.parametrize("image", ["strata-fio", "strata-fio:", "Strata-fio:1", "strata-fio:" + "a" * 129, "x:-1"])
def test_a_local_image_without_a_lower_case_name_and_a_tag_is_refused(image: str) -> None:
    with pytest.raises(StrataError):
        registry.reference("reg.example/strata", image)


ALPHABET = ["a", "z", "0", "9", "A", ".", "-", "_", "__", ":", "/", "5000", "localhost", "reg.example", "@", " ",
            "\u00e9", "\n", "[", "]", "://", "..", "65536", "0", "\x00", "\\", "%", "sha256", "x" * 70]  # fmt: skip


def _fuzzed(rng: random.Random, kind: int) -> str:
    """Random characters; random chunks of prefixes; or a valid-looking prefix with a few chunks put in at random."""
    if kind == 0:
        return "".join(chr(rng.choice([rng.randint(32, 126), rng.randint(0, 0x10FFFF)])) for _ in range(40))
    if kind == 1:
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
    host = rng.choice(["reg.example", "localhost", "192.0.2.7", "a-b.c"]) + rng.choice(["", ":5000", ":1", ":65535"])
    text = host + "/" + "/".join(rng.choice(["strata", "a.b", "x__y", "p--q", "t_1"]) for _ in range(rng.randint(1, 4)))
    for _ in range(rng.randint(0, 2)):
        at = rng.randint(0, len(text))
        text = text[:at] + rng.choice(ALPHABET) + text[at + rng.randint(0, 1) :]
    return text


def test_fuzz_parse_prefix_is_a_valid_name_or_a_strata_error() -> None:
    rng = random.Random(55)
    valid = 0
    for i in range(30000):
        text = _fuzzed(rng, i % 3)
        try:
            host, path = registry.parse_prefix(text)
        except StrataError:
            continue
        valid += 1
        assert f"{host}/{path}" == text.removesuffix("/")
        assert len(text) <= registry.NAME_MAX and ("." in host or ":" in host or host == "localhost")
        assert all(re.fullmatch(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*", part) for part in path.split("/"))
        try:
            assert registry.reference(text, "strata-fio:1").startswith(f"{host}/{path}/strata-fio:")
        except StrataError as e:
            assert "characters" in e.problem
    assert valid > 1000  # the fuzz reaches valid prefixes too


# ---- pushing ---------------------------------------------------------------------------------------------------


def test_push_verifies_tls_with_the_ca_in_a_private_cert_dir_and_reports_the_digest(
    skopeo: Calls, tarball: Path, ca: str
) -> None:
    assert registry.push(tarball, REF, ca_file=ca) == f"{REF}@sha256:{'ab' * 32}"
    inspect, copy = skopeo()
    assert inspect["argv"][:2] == ["inspect", "--raw"] and inspect["argv"][-1] == f"docker://{REF}"
    assert copy["argv"][0] == "copy" and copy["argv"][-2:] == [f"docker-archive:{tarball}", f"docker://{REF}"]
    assert "--dest-tls-verify=true" in copy["argv"] and "--tls-verify=true" in inspect["argv"]
    assert copy["certs"] == inspect["certs"] == {"ca.crt": CA}  # the CA alone, named as skopeo reads a CA
    cert_dir = Path(copy["argv"][copy["argv"].index("--dest-cert-dir") + 1])
    assert cert_dir.name == "certs" and not cert_dir.parent.exists()  # the private dir is gone after the push
    assert "--digestfile" in copy["argv"]
    _never_verify_off([inspect, copy])


def test_push_without_a_ca_uses_the_system_s_trust_and_still_verifies(skopeo: Calls, tarball: Path) -> None:
    registry.push(tarball, REF)
    calls = skopeo()
    assert all("certs" not in c and "auth" not in c for c in calls)
    _never_verify_off(calls)


def test_credentials_go_in_a_private_auth_file_never_on_the_command_line(skopeo: Calls, tarball: Path) -> None:
    registry.push(tarball, REF, creds="robot:s3cret")
    calls = skopeo()
    assert len(calls) == 2
    for call in calls:
        assert not [a for a in call["argv"] if "s3cret" in a]
        auth = json.loads(call["auth"])["auths"]["registry.example:5000"]["auth"]
        assert base64.b64decode(auth) == b"robot:s3cret"
    assert "--dest-authfile" in calls[1]["argv"] and "--authfile" in calls[0]["argv"]


def test_an_auth_file_is_handed_to_skopeo_as_it_is(skopeo: Calls, tarball: Path, tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    auth.write_text('{"auths": {}}')
    registry.push(tarball, REF, authfile=str(auth))
    inspect, copy = skopeo()
    assert copy["argv"][copy["argv"].index("--dest-authfile") + 1] == str(auth)
    assert inspect["argv"][inspect["argv"].index("--authfile") + 1] == str(auth)


@pytest.mark.parametrize(
    "said, fix",
    [
        (X509, "CA certificate"),
        ('time="x" level=fatal msg="... unauthorized: authentication required"', "credentials"),
        ('time="x" level=fatal msg="... dial tcp 192.0.2.9:5000: connect: connection refused"', "address"),
        ('time="x" level=fatal msg="something new"', "by hand"),
    ],
)
def test_a_failed_push_quotes_skopeo_s_own_words_and_the_fix(
    skopeo: Calls, tarball: Path, monkeypatch: pytest.MonkeyPatch, said: str, fix: str
) -> None:
    monkeypatch.setenv("FAKE_SKOPEO_FAIL", said)
    with pytest.raises(StrataError) as e:
        registry.push(tarball, REF, creds="robot:s3cret")
    assert said in e.value.problem and REF in e.value.problem
    assert fix in e.value.fix
    assert "s3cret" not in str(e.value)


def test_the_push_is_skipped_when_the_registry_holds_this_very_image(
    skopeo: Calls, tarball: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = _config_digest(tarball)
    monkeypatch.setenv("FAKE_SKOPEO_HELD", held)
    raw = json.dumps({"schemaVersion": 2, "config": {"digest": held}}).encode()
    assert registry.push(tarball, REF) == f"{REF}@sha256:{hashlib.sha256(raw).hexdigest()}"
    assert [c["argv"][0] for c in skopeo()] == ["inspect"]
    monkeypatch.setenv("FAKE_SKOPEO_HELD", "sha256:" + "0" * 64)  # another image under that tag: pushed again
    registry.push(tarball, REF)
    assert [c["argv"][0] for c in skopeo()] == ["inspect", "inspect", "copy"]


@pytest.mark.parametrize(
    "kwargs, said",
    [
        ({"creds": "robot:x", "authfile": "/x"}, "both"),
        ({"creds": "robot"}, "USER:PASSWORD"),
        ({"ref": "registry.example:5000/team/strata/strata-fio"}, "no tag"),
        ({"ref": "team/strata/strata-fio:1"}, "Docker Hub"),
        ({"tarball": Path("/nonexistent/image.tar")}, "no image tarball"),
    ],
)
def test_push_refuses_bad_arguments_before_running_skopeo(
    skopeo: Calls, tarball: Path, kwargs: dict[str, Any], said: str
) -> None:
    args = {"tarball": tarball, "ref": REF, **kwargs}
    with pytest.raises(StrataError, match=said):
        registry.push(**args)
    assert skopeo() == []


def test_a_file_that_is_not_a_docker_save_tarball_is_refused(skopeo: Calls, tmp_path: Path) -> None:
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar")
    with pytest.raises(StrataError, match="docker save"):
        registry.push(bad, REF)
    assert skopeo() == []


def test_missing_names_skopeo_s_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, tarball: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no skopeo anywhere
    assert "package skopeo" in (registry.missing() or "")
    with pytest.raises(StrataError, match="skopeo"):
        registry.push(tarball, REF)


def test_nothing_is_missing_where_skopeo_is_on_path(skopeo: Calls) -> None:
    assert registry.missing() is None
