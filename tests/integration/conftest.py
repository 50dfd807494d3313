import os

import pytest


@pytest.fixture(autouse=True)
def own_loopback_block(monkeypatch):
    """Each parallel worker's Cassandra nodes listen in a 127.X.0.0/16 block of its own (STRATA_LOOPBACK), so
    that two workers' clusters never share an address; strata runs started by the test inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    if worker.startswith("gw") and worker[2:].isdigit():
        monkeypatch.setenv("STRATA_LOOPBACK", str(10 + int(worker[2:])))
