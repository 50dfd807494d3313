"""The docker runtime, split by job: client, daemon, command lines, containers, session, probe."""
