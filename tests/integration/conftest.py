import contextlib
import io
import os
import time
from pathlib import Path

import pytest

from tests.coverage import declared, keys_of_events, keys_of_results, mismatch
from tests.integration import ledger

ROOT = Path(__file__).resolve().parents[2]
CALL_PASSED = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def _prepared() -> str:
    """What `scripts/prepare` builds that this machine's cache lacks ("" when nothing): no test pays for a
    build in its first call (images, the VM guest, the Kubernetes binaries, Cassandra's and YCSB's jars)."""
    from strata.cli.main import main

    specs = [str(p) for p in sorted((ROOT / "examples").glob("*.yaml"))] + [
        str(p) for p in sorted((ROOT / "tests/integration").glob("needs*.yaml"))
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["prepare", "--check", *specs])
    return "" if rc == 0 else out.getvalue()


@pytest.fixture(autouse=True)
def prepared(_prepared):
    if _prepared:
        pytest.fail(f"not built yet: run scripts/prepare first\n{_prepared}", pytrace=False)


@pytest.fixture(autouse=True)
def own_loopback_block(monkeypatch):
    """Each parallel worker's Cassandra nodes listen in a 127.X.0.0/16 block of its own (STRATA_LOOPBACK), so
    that two workers' clusters never share an address; strata runs started by the test inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...
    if worker.startswith("gw") and worker[2:].isdigit():
        monkeypatch.setenv("STRATA_LOOPBACK", str(10 + int(worker[2:])))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    ledger.enter(item.module.__name__)  # before any fixture: a shared fixture's records are its module's


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[CALL_PASSED] = report.passed
    return report


@pytest.fixture(autouse=True)
def covers_what_it_declares(request, tmp_path):
    """A test's `covers(...)` (tests/coverage.py) is what it ran: the trials it stored under its tmp_path and
    its ledger's events (tests/integration/ledger.py). A key it claims but did not run, or a stored trial's key
    it did not declare, fails it."""
    since = time.time() - 1
    ledger.begin()
    yield
    keys = declared(request.node)
    if keys is None or not request.node.stash.get(CALL_PASSED, False):
        return
    stored = keys_of_results(tmp_path, since)
    missing, extra = mismatch(keys, stored | keys_of_events(ledger.events()), stored)
    if missing or extra:
        pytest.fail(
            f"the keys this test declares (covers) are not those it ran (its trials under {tmp_path} and its "
            f"ledger): declared but not run {sorted(missing)}, run but not declared {sorted(extra)} "
            "(tests/coverage.py)",
            pytrace=False,
        )
