"""Kubernetes: a single-node test bed built on this machine (bed.py), its build, configuration and API client."""
