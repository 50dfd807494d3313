"""The sysbench workload: MariaDB 10.11 under sysbench 1.0.20, on the server template (plugin.py)."""
