"""strata doctor: what this host can build, each with the reason when not (docs/style.md, item 3)."""

from __future__ import annotations

import argparse
import sys

from strata.cli.jsonout import add_json_argument, emit
from strata.core.host import host_facts
from strata.core.jsondoc import whole
from strata.run.doctor import NOT_PROBED, check_doc, checks

HOST_KEYS = ("os", "kernel", "cpus", "memory_bytes", "cgroup_version", "virtualization")

NAME = "doctor"
HELP = "list what this host can build: devices, file systems, runtimes and their drivers, workloads, cgroups, tools"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="skip the probes that start something (a daemon per storage driver, ~10 s each)",
    )
    p.add_argument("--hosts", metavar="SPEC", help="check every host of this experiment's `hosts:` through its agent")
    p.add_argument(
        "--kubernetes",
        metavar="KUBECONFIG",
        nargs="?",
        const="~/.kube/config",
        help="what strata can do on this cluster: nodes, StorageClasses, the cache check, images",
    )
    p.add_argument("--context", help="with --kubernetes: the kubeconfig's context")
    add_json_argument(p)


def main(args: argparse.Namespace) -> int:
    if args.kubernetes:
        from strata.stack.runtimes.kubernetes.doctor import report

        rows = report(args.kubernetes, args.context)
        healthy = all(p is None for w, _, p in rows if w in ("api", "kubeconfig", "this machine"))
        if args.json:
            emit(
                "doctor",
                {
                    "kubernetes": {
                        "kubeconfig": args.kubernetes,
                        "context": args.context,
                        "healthy": healthy,
                        "rows": [{"what": w, "value": v, "problem": p} for w, v, p in rows],
                    }
                },
            )
            return 0 if healthy else 1
        for what, value, problem in rows:
            print(f"  {what:<24} {'ok' if problem is None else 'NO':<3} {value}" + (f"  {problem}" if problem else ""))
        return 0 if healthy else 1
    if args.hosts:
        from strata.experiment.load import load_spec
        from strata.hosts.fleet import doctor

        record: list[dict[str, object]] | None = [] if args.json else None
        log = (lambda line: print(line, file=sys.stderr)) if args.json else print
        bad = doctor(load_spec(args.hosts)[0], probe=not args.quick, log=log, record=record)
        if record is not None:
            emit("doctor", {"hosts": record, "hosts_failed": bad})
        return 1 if bad else 0
    host = host_facts()
    if args.json:
        emit(
            "doctor",
            {
                "host": {k: host.get(k) for k in HOST_KEYS},
                "checks": [check_doc(*row) for row in checks(probe=not args.quick)],
                "note": host.get("note") or None,
            },
        )
        return 0
    print(
        f"{host['os']}, kernel {host['kernel']}, {host['cpus']} CPUs, {(whole(host, 'memory_bytes') or 0) >> 30} GiB, "
        f"cgroup v{host['cgroup_version']}"
        + (f", virtualized ({host['virtualization']})" if host["virtualization"] else "")
    )
    for layer, name, reason in checks(probe=not args.quick):
        status = "ok" if reason is None else "?" if reason == NOT_PROBED else "NO"
        print(f"  {layer:<10} {name:<22} {status}" + (f"  {reason}" if reason else ""))
    if host.get("note"):
        print(f"note: {host['note']}")
    return 0
