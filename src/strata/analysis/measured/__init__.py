"""What the measurements show before anything is concluded: sweeps, the tables of study 004, the pairs the
report and the findings compare (remote against local, native against containers and VMs)."""
