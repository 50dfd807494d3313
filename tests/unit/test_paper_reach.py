"""Every number the studies publish can meet a result (issue 35): each paper.yaml entry's configuration is
produced by one shipped example, as planned (no root, nothing run), or the entry says why none is
(`not_reproduced`). The plan's facts are read by the code that reads them from stored results
(analysis/studies/paper_match.py), from the labels the runner stores (trial.base_result)."""

from collections import defaultdict
from pathlib import Path

import pytest

from strata.analysis.studies.paper import load
from strata.analysis.studies.paper_match import facts_of, produces
from strata.experiment.expand import expand
from strata.experiment.load import load_spec
from strata.run.trial import base_result

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VALUES = load()


def plan(example: Path, scale: str) -> list[dict]:
    exp, wls = load_spec(example, scale)
    trials, _ = expand(exp, wls)
    out = []
    for t in trials:
        if t.repetition == 0:
            r = base_result(t, "plan", exp.name, {})
            out.append(facts_of(dict(r.labels), r.layers))
    return out


@pytest.fixture(scope="module")
def plans() -> dict[str, dict[str, list[dict]]]:
    return {scale: {p.name: plan(p, scale) for p in sorted(EXAMPLES.glob("*.yaml"))} for scale in ("full", "smoke")}


def _producers(v, plans: dict[str, list[dict]], min_sweep: int = 3) -> list[str]:
    return [name for name, facts in plans.items() if produces(v, facts, min_sweep)]


def test_every_value_meets_an_example_or_says_why_not(plans):
    unreachable, stale = [], []
    for v in VALUES:
        found = _producers(v, plans["full"])
        if v.not_reproduced and found:
            stale.append(f"{v.source}, {v.what}: says not_reproduced, yet {found[0]} produces it")
        elif not v.not_reproduced and not found:
            unreachable.append(f"{v.source}, {v.what}")
    assert not unreachable, f"{len(unreachable)} values no example can meet, without a reason: {unreachable[:5]}"
    assert not stale, stale[:5]
    assert all(len(v.not_reproduced) > 40 for v in VALUES if v.not_reproduced), "a reason says why and what to do"


def test_every_table_and_figure_meets_a_smoke_run(plans):
    """At smoke scale a sweep keeps its ends (and a container sweep its first and last loads): each table
    and figure that an example reproduces still meets one of its values, so a smoke report shows it."""
    groups = defaultdict(list)
    for v in VALUES:
        if not v.not_reproduced:
            groups[(v.study, v.where)].append(v)
    missing = [k for k, vs in groups.items() if not any(_producers(v, plans["smoke"], 2) for v in vs)]
    assert not missing, missing


def test_study_001s_table_2_meets_the_cassandra_example_at_both_scales(plans):
    t2 = [v for v in VALUES if v.study == "001" and v.where == "Table 2" and not v.not_reproduced]
    assert len(t2) == 36  # Docker and nonvirtualized; VMware's 18 say why not
    for scale in ("full", "smoke"):
        assert all(_producers(v, {"c": plans[scale]["shirinbab-cassandra.yaml"]}) for v in t2), scale


def test_a_load_named_high_is_not_the_studys_high_load():
    """Regression: paper.yaml selected `load: high` (strata's 32 jobs x QD32) for section 5.5, whose high
    load is 16 parallel jobs; loads are now matched by their jobs and depth."""
    v = next(v for v in VALUES if v.where == "Figure 4b" and "direct-attached, random read, high load" in v.what)
    low = {"workload": "rr", "numjobs": 1, "iodepth": 1, "attached": "local", "load": "low", "filesystem": "xfs"}
    high32 = {**low, "numjobs": 32, "iodepth": 32, "load": "high"}
    high16 = {**low, "numjobs": 16, "iodepth": 32, "load": "16-jobs"}
    assert not produces(v, [low, high32]) and produces(v, [low, high16])
    assert not produces(v, [high16])  # relative to low load: the low load must be planned too


CUTS = [("shirinbab-cassandra.yaml", "001", "Table 2"), ("xu2017-cassandra.yaml", "003", None)]


@pytest.mark.parametrize("example, study, where", CUTS)
def test_the_suites_smoke_cut_of_a_cassandra_study_meets_its_values(tmp_path, example, study, where):
    """tests/integration/test_studies.py runs each Cassandra study cut to fit the suite (SPEC_CUTS); here, the plan
    of that cut produces configurations that meet the study's values (at smoke scale their results are flagged
    cache, their data set in memory, and drawn apart: test_studies.py `_in_memory`)."""
    import sys

    import yaml

    sys.path.insert(0, str(EXAMPLES.parent))
    from tests.integration.test_studies import SPEC_CUTS

    doc = yaml.safe_load((EXAMPLES / example).read_text())
    cut = dict(SPEC_CUTS[example][0])
    doc["exclude"] = list(doc.get("exclude") or []) + cut.pop("exclude_more", [])
    doc.update(cut)
    spec = tmp_path / example
    spec.write_text(yaml.safe_dump(doc))
    facts = plan(spec, "smoke")
    met = [v for v in VALUES if v.study == study and where in (None, v.where) and produces(v, facts, 2)]
    assert met, f"the suite's cut of {example} meets no value of study {study}"
    if where == "Table 2":
        assert {v.match["runtime"] for v in met} == {"native", "docker:*"} and {v.match["offered"] for v in met} == {
            0.4
        }


def test_the_counts_docs_studies_md_gives_are_the_files():
    page = (EXAMPLES.parent / "docs" / "studies.md").read_text()
    told = len([v for v in VALUES if not v.not_reproduced])
    assert f"{told} of its {len(VALUES)} values" in " ".join(page.split())
    assert f"the other {len(VALUES) - told} say in the entry why" in " ".join(page.split())
