"""strata doctor: what this host can build, each with the reason when not (docs/style.md, item 3)."""

from __future__ import annotations

import argparse

from strata.core.host import host_facts
from strata.core.jsondoc import whole
from strata.run.doctor import NOT_PROBED, checks

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


def main(args: argparse.Namespace) -> int:
    if args.kubernetes:
        from strata.stack.runtimes.kubernetes.doctor import report

        rows = report(args.kubernetes, args.context)
        for what, value, problem in rows:
            print(f"  {what:<24} {'ok' if problem is None else 'NO':<3} {value}" + (f"  {problem}" if problem else ""))
        return 0 if all(p is None for w, _, p in rows if w in ("api", "kubeconfig", "this machine")) else 1
    if args.hosts:
        from strata.experiment.load import load_spec
        from strata.hosts.fleet import doctor

        return 1 if doctor(load_spec(args.hosts)[0], probe=not args.quick) else 0
    host = host_facts()
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
