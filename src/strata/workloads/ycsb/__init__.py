"""The ycsb workload's parts (issue 8): Apache Cassandra 5.0 nodes driven by the YCSB 0.17.0
client. Not in the workload registry yet; see docs/ycsb-mechanics.md."""
