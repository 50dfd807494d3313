"""The server-workload template: the lifecycle every server application shares.

A server workload's instances are servers (a Cassandra node, a PostgreSQL server), run by the
runtime under test like any instance, so limits, collectors, journal and cleanup are the runtime's;
its clients run on the host, outside the stack under test. The template owns what every such
application does, as PerfKitBenchmarker's Prepare/Run/Cleanup does:

1. start N server instances, each with its data directory on the stack's path (script.py: the
   instance's shell script around the server, which stops it when the workload writes `stop`);
2. wait until each is ready (lifecycle.wait_ready: the workload's probe, the server's log tail when
   it dies or is late);
3. load the data set, and run any other unmeasured phase (warm-up);
4. run the clients inside the collectors' window, at a fixed concurrency or an offered rate
   (clients.py: host processes with their CPU time);
5. stop the servers, and return each instance's output for the parser.

A workload derives from `ServerTemplate` (template.py), declares what its server is (facts.py) and supplies
its commands (the server's start command, its ready probe, the clients of each phase), its parser of a trial
(`parse_trial`) and its metric declaration. What servers share beyond the lifecycle is here too: the spec's
common keys (fields.py), the settings map (settings.py), the log on a path of its own (logpath.py), the run's
loopback block and ports (loopback.py), the trial's record read back (records.py), the memory the servers can
use (memory.py), one latency summary (latency.py) and the result fields of a transaction workload
(transactions.py).
"""
