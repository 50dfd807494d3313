"""strata testbed kubernetes up|down|status|load: a Kubernetes cluster on this machine to test on (one node, this
machine; or with --nodes N, N nodes each a test host of its own)."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from strata.core.errors import StrataError
from strata.core.jsondoc import arr, num, text

NAME = "testbed"
HELP = "a test bed on this machine: `kubernetes up|down|status|load`"
UP_TIMEOUT_S = 4 * 3600  # a first `up` builds Kubernetes (tens of minutes on 2 cores)
DOWN_TIMEOUT_S = 180


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bed", metavar="BED", required=True)
    k = sub.add_parser("kubernetes", help="etcd, the Kubernetes control plane, a kubelet, containerd")
    ks = k.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = ks.add_parser("up", help="build (once) and start the cluster; returns once every node is Ready")
    up.add_argument("--foreground", action="store_true", help="stay in the foreground; Ctrl-C brings it down")
    up.add_argument(
        "--nodes",
        type=int,
        default=0,
        metavar="N",
        help="N nodes (1 to 4), each a test host of its own (network and mount namespaces, containerd, kubelet, "
        "disk), the control plane on this machine; default: one node, this machine",
    )
    up.add_argument("--disk-size", default="2GiB", metavar="SIZE", help="each node's disk (with --nodes): 2GiB")
    up.add_argument(
        "--registry",
        action="store_true",
        help="with --nodes: a registry of the bed's own on a test host of its bridge (TLS, the bed's CA), which the "
        "nodes pull from; `status` gives its `images:` prefix and CA",
    )
    up.add_argument(
        "--buffered-disk",
        action="append",
        type=int,
        default=[],
        metavar="I",
        help="with --nodes: node I's disk without direct I/O (this machine's page cache answers for it: a planted "
        "cache for the cache check); repeatable",
    )
    up.add_argument(
        "--registry-ca",
        action="append",
        default=[],
        metavar="HOST:PORT=CA_FILE",
        help="a registry the nodes pull from, its certificate verified against CA_FILE (repeatable)",
    )
    ks.add_parser("down", help="stop the cluster and remove everything it made")
    ks.add_parser("status", help="the running cluster's kubeconfig, addresses and processes (JSON)")
    load = ks.add_parser("load", help="import an image tarball (`docker save` format) into the node")
    load.add_argument("tarball", type=Path)


def main(args: argparse.Namespace) -> int:
    from strata.stack.kube import holder as bed

    if args.action == "up":
        nodes, disk_bytes, registries = _up_options(args)
        if args.foreground:
            buffered = tuple(args.buffered_disk)
            bed.hold(
                nodes=nodes, disk_bytes=disk_bytes, registries=registries, registry=args.registry, buffered=buffered
            )
            return 0
        options = ["--nodes", str(nodes), "--disk-size", str(args.disk_size)]
        options += ["--registry"] if args.registry else []
        options += [o for i in args.buffered_disk for o in ("--buffered-disk", str(i))]
        return _up_detached(options + [o for r in args.registry_ca for o in ("--registry-ca", r)])
    if args.action == "down":
        return _down()
    facts = bed.current()
    if args.action == "status":
        if not facts:
            print("no Kubernetes test bed runs here")
            return 1
        print(json.dumps(facts, indent=1))
        return 0
    if not facts:
        raise StrataError("no Kubernetes test bed runs here", "strata testbed kubernetes up")
    if not args.tarball.is_file():
        raise StrataError(f"{args.tarball} is not a file", "give a tarball made by `docker save`")
    from strata.stack.kube import images

    node_facts = [n for n in arr(facts, "nodes") if isinstance(n, dict)]
    sockets = [text(n, "containerd") for n in node_facts] or [text(facts, "containerd")]
    for sock in sockets:  # every node's containerd
        print(images.import_tarball(Path(sock), args.tarball).strip())
    return 0


def _up_options(args: argparse.Namespace) -> tuple[int, int, dict[str, str]]:
    """--nodes, --disk-size and --registry-ca, checked: bad ones are errors that name the fix."""
    from strata.core.units import parse_size
    from strata.stack.kube.nodes import MAX_NODES

    if not 0 <= args.nodes <= MAX_NODES:
        raise StrataError(f"--nodes {args.nodes}", f"give from 1 to {MAX_NODES} nodes")
    try:
        disk_bytes = parse_size(str(args.disk_size))
    except ValueError as e:
        raise StrataError(f"--disk-size {args.disk_size!r}: {e}", "give a size such as 2GiB") from None
    if not 512 << 20 <= disk_bytes <= 1 << 40:
        raise StrataError(f"--disk-size {args.disk_size}", "give from 512MiB to 1TiB")
    if any(not 1 <= i <= args.nodes for i in args.buffered_disk):
        raise StrataError(f"--buffered-disk {args.buffered_disk}", f"name nodes from 1 to --nodes ({args.nodes})")
    if args.registry and not args.nodes:
        raise StrataError(
            "--registry without --nodes", "give --nodes N: the registry is a test host of the bed's bridge"
        )
    registries: dict[str, str] = {}
    for item in args.registry_ca:
        host, sep, ca = str(item).partition("=")
        if not sep or ":" not in host or not Path(ca).is_file():
            raise StrataError(f"--registry-ca {item!r}", "give HOST:PORT=CA_FILE, the CA's certificate as a file")
        registries[host] = str(Path(ca).resolve())
    return args.nodes, disk_bytes, registries


def _up_detached(options: list[str]) -> int:
    """Start `up --foreground OPTIONS` in a session of its own (it holds the bed and its journal), wait until it
    is ready or has failed, and say where its log is."""
    from strata.stack.kube import holder as bed

    if bed.current():
        raise StrataError("a Kubernetes test bed already runs here", "strata testbed kubernetes down")
    bed.beds_dir().mkdir(parents=True, exist_ok=True)
    log_path = bed.beds_dir() / "holder.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "strata.cli.main", "testbed", "kubernetes", "up", "--foreground", *options],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    shown = 0
    deadline = time.monotonic() + UP_TIMEOUT_S
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        print(text[shown:], end="", flush=True)
        shown = len(text)
        facts = bed.current()
        if facts and facts.get("holder") == proc.pid:
            print(json.dumps(facts, indent=1))
            return 0
        if proc.poll() is not None:
            print(log_path.read_text(errors="replace")[shown:], end="")
            raise StrataError(f"the test bed did not come up (exit {proc.returncode})", f"read {log_path}")
        time.sleep(1)
    os.kill(proc.pid, signal.SIGTERM)
    raise StrataError(f"the test bed was not up within {UP_TIMEOUT_S} s", f"read {log_path}")


def _down() -> int:
    from strata.stack.kube import holder as bed

    facts = bed.current()
    if not facts:
        n = bed.undo_orphans()  # a bed whose holder was killed keeps running: its journal says what to stop
        print(f"no Kubernetes test bed runs here{f'; {n} resource(s) of a killed one undone' if n else ''}")
        return 0
    pid = int(num(facts, "holder") or 0)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + DOWN_TIMEOUT_S
    while time.monotonic() < deadline:
        if bed.current() is None and not Path(f"/proc/{pid}").exists():
            print(f"test bed {facts['token']} down")
            return 0
        time.sleep(0.5)
    raise StrataError(
        f"the test bed's holder (pid {pid}) did not finish within {DOWN_TIMEOUT_S} s",
        "wait, then `strata cleanup` (it undoes the bed from its journal once the holder is gone)",
    )
