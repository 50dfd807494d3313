"""The pgbench workload: PostgreSQL 15 under pgbench, on the server template (plugin.py)."""
