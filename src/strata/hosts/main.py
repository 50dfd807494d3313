"""The agent image's entry point: `launch` (the Swarm service) and `serve` (the agent itself).

`python3 -m strata.hosts.main launch ...` runs in the Swarm service, whose only
privilege is the node's docker socket; it starts the agent as a privileged
container in the host's PID and network namespaces with the host's /dev,
/sys, state dir and workdir (a Swarm service can have none of these itself),
follows it, and stops it when Swarm stops the service (SIGTERM). A launcher
that dies leaves its agent running: the manager's journal entry for the
service removes that container through the node's daemon (deploy.py).

`python3 -m strata.hosts.main serve ...` is the agent: first it undoes what a
previous agent on this host left (its journals, whose lock no live process
holds), then it answers the manager (server.py) until SIGTERM, on which it
stops its parts and tears its stacks down.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from types import FrameType

AGENT_STOP_S = 30


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", required=True, help="the host's name in the experiment")
    p.add_argument("--address", required=True, help="the node's address the agent listens on")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--workdir", required=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="strata.hosts.main")
    sub = p.add_subparsers(dest="cmd", required=True)
    launch = sub.add_parser("launch", help="start the agent on this node's daemon and follow it")
    _common(launch)
    launch.add_argument("--container", required=True)
    launch.add_argument("--image", required=True)
    launch.add_argument("--docker-socket", required=True)
    _common(sub.add_parser("serve", help="the agent: answer the manager"))
    return p


# `--privileged` asks for every capability; where the node's own bounding set lacks one (this project's
# VMs have no CAP_SYS_RESOURCE) runc refuses ("unable to apply caps"), so the agent then gets what
# --privileged gives, spelled out, without that capability.
UNPRIVILEGED_FALLBACK = [
    "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
    "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined",
    "--device-cgroup-rule", "a *:* rwm",
]  # fmt: skip


def agent_run_argv(args: argparse.Namespace, privileged: list[str]) -> list[str]:
    """`docker run -d` of the agent: privileged, in the host's PID and network namespaces."""
    state, work = args.state_dir, args.workdir
    env = {
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "STRATA_STATE_DIR": state,
        "STRATA_IMAGE_DIR": f"{state}/images",
        "STRATA_CACHE_DIR": f"{state}/cache",
    }
    argv = [
        "docker", "-H", f"unix://{args.docker_socket}", "run", "-d", "--name", args.container,
        *privileged, "--pid", "host", "--network", "host", "--label", "strata.agent=1",
        "-v", "/dev:/dev", "-v", "/sys:/sys", "-v", "/sys/fs/cgroup:/sys/fs/cgroup",
        "-v", f"{state}:{state}", "-v", f"{work}:{work}",
        "-v", "/lib/modules:/lib/modules:ro", "-v", "/etc/os-release:/etc/host-os-release:ro",
        "-e", "STRATA_AGENT_TOKEN",
    ]  # fmt: skip
    for k, v in env.items():
        argv += ["-e", f"{k}={v}"]
    argv += [args.image, "python3", "-m", "strata.hosts.main", "serve"]
    argv += ["--host", args.host, "--address", args.address, "--port", str(args.port)]
    return argv + ["--state-dir", state, "--workdir", work]


def launch(args: argparse.Namespace) -> int:
    docker = ["docker", "-H", f"unix://{args.docker_socket}"]
    subprocess.run([*docker, "rm", "-f", args.container], capture_output=True)  # one a killed launcher left
    cp = subprocess.run(agent_run_argv(args, ["--privileged"]), capture_output=True, text=True)
    if cp.returncode != 0 and "caps" in cp.stderr:
        print(f"launcher: --privileged refused ({cp.stderr.strip()[-200:]}); every capability but SYS_RESOURCE")
        subprocess.run([*docker, "rm", "-f", args.container], capture_output=True)
        cp = subprocess.run(agent_run_argv(args, UNPRIVILEGED_FALLBACK), capture_output=True, text=True)
    if cp.returncode != 0:
        print(f"launcher: the agent did not start: {cp.stderr.strip()}", flush=True)
        return cp.returncode

    def stop(signum: int, frame: FrameType | None) -> None:
        subprocess.run([*docker, "stop", "-t", str(AGENT_STOP_S), args.container], capture_output=True)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    logs = subprocess.Popen([*docker, "logs", "-f", args.container])  # the agent's output in the service's log
    waited = subprocess.run([*docker, "wait", args.container], capture_output=True, text=True)
    logs.terminate()
    subprocess.run([*docker, "rm", "-f", args.container], capture_output=True)
    return int(waited.stdout.strip() or 1)


def serve(args: argparse.Namespace) -> int:
    from strata.hosts.agent import Agent
    from strata.hosts.server import AgentServer

    token = os.environ.get("STRATA_AGENT_TOKEN", "")
    agent = Agent(
        args.host, Path(args.workdir), Path(args.state_dir), node={"node": os.uname().nodename}, address=args.address
    )
    left = agent.cleanup_previous()
    if left["undone"]:
        print(f"agent {args.host}: undid {left['undone']} resource(s) a previous agent left", flush=True)
    server = AgentServer(agent, args.address, args.port, token)

    def stop(signum: int, frame: FrameType | None) -> None:
        def down() -> None:
            agent.shutdown(f"signal {signum}")
            server.shutdown()

        threading.Thread(target=down, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"agent {args.host} ({agent.id}) on {args.address}:{args.port}", flush=True)
    server.serve_forever(poll_interval=0.2)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    return launch(args) if args.cmd == "launch" else serve(args)


if __name__ == "__main__":
    sys.exit(main())
