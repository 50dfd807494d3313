"""strata's images in the user's registry (`images: REGISTRY/PREFIX`), for pods that pull them.

strata builds each workload's image as a `docker save` tarball (stack/runtimes/docker/image.py) and imports
it into a node's containerd; a cluster whose containerd strata cannot reach is to pull it from the user's
registry instead (issue 55: the kubernetes runtime does not call this module yet). skopeo (Debian's `skopeo`)
copies the tarball there without any daemon: `skopeo copy docker-archive:TARBALL docker://REGISTRY/PREFIX/NAME:TAG`.

TLS is verified on every call (`--dest-tls-verify=true`, which also overrides an `insecure` entry in
registries.conf); a private CA is given as a directory holding `ca.crt`, the form skopeo's `--cert-dir`
reads. A user and password go into a private auth file, never on the command line, where any local user
could read them in /proc.

Names follow the grammar of image references (github.com/distribution/reference, reference.go): path
components are lower-case, and the repository name (host included) is at most 255 characters
(`NameTotalLengthMax`). The host is required and must look like one (a `.`, a `:port` or `localhost`), since
without one `team/strata` means Docker Hub's `docker.io/team/strata`; an IPv6 literal is not taken.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from strata.core.errors import StrataError

NAME_MAX = 255  # the repository name, host included (distribution/reference NameTotalLengthMax)
PUSH_TIMEOUT_S = 1800  # a hang guard: a large image to a slow registry
INSPECT_TIMEOUT_S = 60
_COMPONENT = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*")  # a path component
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # a domain component
_TAG = re.compile(r"\w[\w.-]{0,127}", re.ASCII)
_EXAMPLE = "registry.example:5000/team/strata"
_FIXES = (  # (what skopeo says, what to do)
    (("x509:", "certificate", "tls:"), "give the registry's CA certificate (ca_file); verification stays on"),
    (("unauthorized", "authentication required", "denied"), "check the credentials and that they may push there"),
    (("connection refused", "no such host", "i/o timeout", "no route to host", "unreachable"), "check the address"),
)


def _problem(text: str, why: str) -> StrataError:
    return StrataError(f"image prefix {text[:80]!r}: {why}", f"write REGISTRY[:PORT]/PATH, e.g. {_EXAMPLE}")


def _bad_component(path: str) -> str | None:
    """The first component of a repository path the grammar refuses, or None."""
    return next((part for part in path.split("/") if not _COMPONENT.fullmatch(part)), None)


def parse_prefix(text: str) -> tuple[str, str]:
    """`REGISTRY[:PORT]/PATH` -> (host[:port], path); a StrataError naming what is wrong otherwise."""
    if not text:
        raise _problem(text, "empty")
    if len(text) > NAME_MAX:
        raise _problem(text, f"{len(text)} characters, more than a registry name may have ({NAME_MAX})")
    if "://" in text:
        raise _problem(text, "leave out the scheme: strata always speaks HTTPS to a registry")
    host, _, path = text.removesuffix("/").partition("/")
    if not path:
        raise _problem(text, "no path after the registry (strata's images go under REGISTRY/PATH)")
    name, colon, port = host.partition(":")
    if not ("." in name or colon or name == "localhost"):
        raise _problem(text, f"{host!r} is not a registry host (a bare name means Docker Hub's docker.io/{text})")
    if not all(_LABEL.fullmatch(label) for label in name.split(".")):
        raise _problem(text, f"{name[:80]!r} is not a host name or IPv4 address")
    if colon and not (port.isascii() and port.isdigit() and len(port) <= 5 and 0 < int(port) < 65536):
        raise _problem(text, f"port {port[:10]!r} is not a number from 1 to 65535")
    if (bad := _bad_component(path)) is not None:
        raise _problem(text, f"path component {bad[:80]!r} is not lower-case letters and digits joined by . _ -")
    return host, path


def _split_tag(image: str) -> tuple[str, str]:
    """`NAME:TAG` -> (NAME, TAG); NAME may hold a registry's `host:port/`."""
    name, colon, tag = image.rpartition(":")
    if not colon or "/" in tag or not _TAG.fullmatch(tag):
        raise StrataError(f"image {image[:80]!r} has no tag", "name it NAME:TAG (strata-fio:a7d9b920631e)")
    return name, tag


def reference(prefix: str, image: str) -> str:
    """strata's local image (`strata-fio:a7d9b920631e`) as named under `images: REGISTRY/PREFIX`
    (`registry.example:5000/team/strata/strata-fio:a7d9b920631e`): the name pushed and pulled."""
    host, path = parse_prefix(prefix)
    name, tag = _split_tag(image)
    if _bad_component(name) is not None:
        raise StrataError(f"image {image[:80]!r} is not a lower-case NAME:TAG", "a bug in strata: report it")
    full = f"{host}/{path}/{name}"
    if len(full) > NAME_MAX:
        raise _problem(prefix, f"with the image {name!r} the name has {len(full)} characters, over {NAME_MAX}")
    return f"{full}:{tag}"


def missing() -> str | None:
    """What this host lacks to push images (None: nothing), with the Debian package that brings it."""
    return None if shutil.which("skopeo") else "skopeo is not installed (Debian package skopeo: apt-get install skopeo)"


def _options(kind: str, certs: Path | None, authfile: str | None) -> list[str]:
    """skopeo's TLS and credential options for the destination (`kind` "dest-") or an inspected image ("")."""
    argv = [f"--{kind}tls-verify=true"]  # explicit: an `insecure` registries.conf entry never turns it off
    argv += [f"--{kind}cert-dir", str(certs)] if certs else []
    return argv + ([f"--{kind}authfile", authfile] if authfile else [])


def _config_digest(tarball: Path) -> str:
    """The image's config digest (its image ID) in a `docker save` tarball: it names the layers by content, and
    skopeo copies the config unchanged, so the registry's copy of this image has the same one."""
    try:
        with tarfile.open(tarball) as tar:
            manifest = json.loads(_member(tar, "manifest.json"))
            if not isinstance(manifest, list) or len(manifest) != 1:
                raise ValueError("its manifest.json does not list one image")
            config = _member(tar, manifest[0]["Config"])
    except (OSError, tarfile.TarError, KeyError, TypeError, ValueError) as e:
        raise StrataError(f"{tarball} is not the `docker save` tarball of one image: {e}", "rebuild it: strata prepare")
    return "sha256:" + hashlib.sha256(config).hexdigest()


def _member(tar: tarfile.TarFile, name: str) -> bytes:
    f = tar.extractfile(name)  # a KeyError when absent
    if f is None:
        raise ValueError(f"{name} is not a file")
    return f.read()


def _present(ref: str, options: list[str], config: str) -> str | None:
    """The manifest digest of `ref` when the registry already holds this very image under that tag, else None
    (absent, another image, or not asked cheaply: then strata pushes)."""
    argv = ["skopeo", "inspect", "--raw", *options, f"docker://{ref}"]
    try:
        cp = subprocess.run(argv, capture_output=True, timeout=INSPECT_TIMEOUT_S, stdin=subprocess.DEVNULL)
        held = json.loads(cp.stdout)["config"]["digest"] if cp.returncode == 0 else None
    except (subprocess.TimeoutExpired, ValueError, KeyError, TypeError):
        return None
    return "sha256:" + hashlib.sha256(cp.stdout).hexdigest() if held == config else None


def push(
    tarball: Path, ref: str, ca_file: str | None = None, creds: str | None = None, authfile: str | None = None
) -> str:
    """Push a `docker save` tarball to the registry as `ref` (from `reference`); returns `ref@DIGEST`
    (`ref` alone when skopeo reports no digest). Skipped when the registry holds this image under `ref`."""
    host, _ = parse_prefix(_split_tag(ref)[0])
    if (lack := missing()) is not None:
        raise StrataError(f"cannot push images to {host}: {lack}", "run scripts/install")
    if creds is not None and authfile is not None:
        raise StrataError("both credentials and an auth file given for the registry", "give one of them")
    if creds is not None and ":" not in creds:
        raise StrataError("the registry's credentials are not USER:PASSWORD", "write them as USER:PASSWORD")
    if ":" in str(tarball) or not tarball.is_file():
        raise StrataError(f"no image tarball at {str(tarball)!r} (or its path has a ':')", "build it: strata prepare")
    config = _config_digest(tarball)
    with tempfile.TemporaryDirectory(prefix="strata-push-") as tmp:  # mode 0700: the CA, the auth file
        certs = Path(tmp) / "certs" if ca_file else None
        if certs and ca_file:
            certs.mkdir()
            shutil.copyfile(ca_file, certs / "ca.crt")
        if creds is not None:
            authfile = str(Path(tmp) / "auth.json")
            Path(authfile).write_text(
                json.dumps({"auths": {host: {"auth": base64.b64encode(creds.encode()).decode()}}})
            )
        if (digest := _present(ref, _options("", certs, authfile), config)) is not None:
            return f"{ref}@{digest}"
        digestfile = Path(tmp) / "digest"
        argv = ["skopeo", "copy", "--quiet", *_options("dest-", certs, authfile), "--digestfile", str(digestfile)]
        argv += [f"docker-archive:{tarball}", f"docker://{ref}"]
        try:
            cp = subprocess.run(argv, capture_output=True, text=True, timeout=PUSH_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise StrataError(f"pushing {ref} took over {PUSH_TIMEOUT_S} s", f"check the registry {host}")
        if cp.returncode != 0:
            raise _failed(ref, cp.stderr or cp.stdout)
        digest = digestfile.read_text().strip() if digestfile.exists() else ""
    return f"{ref}@{digest}" if digest else ref


def _failed(ref: str, output: str) -> StrataError:
    """skopeo's own last lines, and the fix its words point to."""
    last = [line.strip()[:500] for line in output.splitlines() if line.strip()][-3:]
    said = " / ".join(last) or "no output"
    fix = next((f for needles, f in _FIXES if any(n in said.lower() for n in needles)), "run the push by hand")
    return StrataError(f"skopeo could not push {ref}: {said}", f"{fix} (skopeo copy ... docker://{ref})")
