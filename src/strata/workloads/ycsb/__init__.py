"""The ycsb workload (issue 8): Apache Cassandra 5.0 nodes driven by the YCSB 0.17.0 client.

plugin.py is the workload plugin (registered as `ycsb`); server.py its measured phase; the rest
are its mechanics (docs/ycsb-mechanics.md)."""
