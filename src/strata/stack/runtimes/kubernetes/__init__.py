"""The `kubernetes` runtime (issue 24), in progress: pods of one trial (pods.py). Not registered yet."""
