"""strata testbed kubernetes up|down|status|load: a single-node Kubernetes cluster on this machine to test on."""

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
from strata.core.jsondoc import num, text

NAME = "testbed"
HELP = "a test bed on this machine: `kubernetes up|down|status|load`"
UP_TIMEOUT_S = 4 * 3600  # a first `up` builds Kubernetes (tens of minutes on 2 cores)
DOWN_TIMEOUT_S = 180


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="bed", metavar="BED", required=True)
    k = sub.add_parser("kubernetes", help="etcd, the Kubernetes control plane, a kubelet, containerd")
    ks = k.add_subparsers(dest="action", metavar="ACTION", required=True)
    up = ks.add_parser("up", help="build (once) and start the cluster; returns once the node is Ready")
    up.add_argument("--foreground", action="store_true", help="stay in the foreground; Ctrl-C brings it down")
    ks.add_parser("down", help="stop the cluster and remove everything it made")
    ks.add_parser("status", help="the running cluster's kubeconfig, addresses and processes (JSON)")
    load = ks.add_parser("load", help="import an image tarball (`docker save` format) into the node")
    load.add_argument("tarball", type=Path)


def main(args: argparse.Namespace) -> int:
    from strata.stack.kube import bed

    if args.action == "up":
        if args.foreground:
            bed.hold()
            return 0
        return _up_detached()
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

    print(images.import_tarball(Path(text(facts, "containerd")), args.tarball).strip())
    return 0


def _up_detached() -> int:
    """Start `up --foreground` in a session of its own (it holds the bed and its journal), wait until it is
    ready or has failed, and say where its log is."""
    from strata.stack.kube import bed

    if bed.current():
        raise StrataError("a Kubernetes test bed already runs here", "strata testbed kubernetes down")
    bed.beds_dir().mkdir(parents=True, exist_ok=True)
    log_path = bed.beds_dir() / "holder.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "strata.cli.main", "testbed", "kubernetes", "up", "--foreground"],
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
    from strata.stack.kube import bed

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
