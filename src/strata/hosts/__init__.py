"""Experiments that span machines, on Docker Swarm (docs/many-hosts.md).

strata on a Swarm manager drives the experiment (deploy.py, executor.py); an
agent on every host (agent.py, server.py) builds that host's stacks with the
code a local run uses and runs its part of each trial behind a barrier that
spans the hosts (part.py, barrier.py); the manager merges the parts into one
result (merge.py). The experiment file's `hosts:` and `placement:` are in
experiment/hosts.py; the launcher and the agent's entry point in main.py;
test hosts on one machine (network namespaces in one Swarm) in testbed.py.
"""
