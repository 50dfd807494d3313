import contextlib
import io
import os
import time
from pathlib import Path

import pytest

from tests.coverage import declared, keys_of_results, mismatch

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when == "call":
        item.stash[CALL_PASSED] = report.passed
    return report


@pytest.fixture(autouse=True)
def covers_what_it_declares(request, tmp_path):
    """A test that declares `covers(...)` of trials it stores (tests/coverage.py) stored trials that show exactly
    the keys it declares: a key it claims but did not run, or ran but did not declare, fails it."""
    since = time.time() - 1
    yield
    d = declared(request.node)
    if d is None or not d.stored or not request.node.stash.get(CALL_PASSED, False):
        return
    observed = keys_of_results(tmp_path, since)
    missing, extra = mismatch(d.keys, observed)
    if missing or extra:
        pytest.fail(
            f"the keys this test declares (covers) are not those of the trials it stored under {tmp_path}: "
            f"declared but not run {sorted(missing)}, run but not declared {sorted(extra)} (tests/coverage.py)",
            pytrace=False,
        )
