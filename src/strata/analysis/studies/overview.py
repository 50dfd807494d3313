"""What `strata studies` prints: each seed study (studies.yaml) with its figures and tables, its published
values no example reproduces, its numbers as a result set (published.py) and every finding's verdict on them.
"""

from __future__ import annotations

from strata.analysis.findings.findings import FINDINGS, Finding
from strata.analysis.findings.verdict import Outcome
from strata.analysis.studies import paper, published
from strata.analysis.studies.paper import PaperValue
from strata.analysis.studies.studies import Experiment, Study, load
from strata.core.errors import StrataError
from strata.core.jsondoc import obj

SHOWN = 4  # numbers shown of a finding's verdict beside every one against it


def overview(only: list[str] | None = None) -> str:
    """What `strata studies` prints: per study, its experiments with the example that reproduces each (and
    how it differs) or why none does, its published values no example reproduces, its numbers as a result
    set and what was left out of it, its claims no finding can check, and every finding that cites it with
    the criterion and the verdict on the study's own numbers."""
    unknown = sorted(set(only or []) - {s.study for s in load()})
    if unknown:
        raise StrataError(
            f"no study {', '.join(unknown)}", f"name one of {', '.join(s.study for s in load())} (docs/studies.md)"
        )
    out: list[str] = []
    values = paper.load()
    for s in load():
        if only and s.study not in only:
            continue
        out += [f"study {s.study}: {s.reference}", f"  measures: {s.measures}", "  what differs here, and why:"]
        out += [f"    {what}: {text}" for what, text in s.differs]
        out += ["  its figures and tables:"] + [line for e in s.experiments for line in _experiment_lines(e)]
        out += _unreproduced([v for v in values if v.study == s.study])
        out += _result_set(s)
        unchecked = [c for c in s.claims if c.not_checkable]
        if unchecked:
            out.append("  claims no finding checks here:")
            out += [f'    "{c.quote.quote}" (section {c.quote.section}): {c.not_checkable}' for c in unchecked]
        out.append("  findings, judged on the study's own numbers (as on your results: `strata report`):")
        for f in FINDINGS:
            if s.study in published.studies_of(f):
                out += _finding_lines(f, published.judged(f, s.study))
        out.append("")
    return "\n".join(out)


def overview_doc(only: list[str] | None = None) -> dict[str, object]:
    """What `strata studies --json` prints: the same as `overview`, as data (schema: strata/cli/schemas.py)."""
    known = [s.study for s in load()]
    unknown = sorted(set(only or []) - set(known))
    if unknown:
        raise StrataError(f"no study {', '.join(unknown)}", f"name one of {', '.join(known)} (docs/studies.md)")
    values = paper.load()
    out = []
    for s in load():
        if only and s.study not in only:
            continue
        mine = [v for v in values if v.study == s.study]
        out.append(
            {
                "study": s.study,
                "reference": s.reference,
                "measures": s.measures,
                "differs": [{"what": what, "why": why} for what, why in s.differs],
                "experiments": [
                    {
                        "where": e.where,
                        "shows": e.shows,
                        "example": e.example if e.example and not e.not_reproduced else None,
                        "section": e.section or None,
                        "not_reproduced": e.not_reproduced or None,
                        "differs": e.differs or None,
                    }
                    for e in s.experiments
                ],
                "published_values": len(mine),
                "unreproduced": [{"where": v.where, "why": v.not_reproduced} for v in mine if v.not_reproduced],
                "result_cases": [
                    {"name": c.name, "values": len(c.values)} for c in published.cases(s.study)
                ],  # fmt: skip
                "left_out": [
                    {"where": x.value.where, "what": x.value.what, "why": x.why} for x in published.left_out(s.study)
                ],
                "unchecked_claims": [
                    {"quote": c.quote.quote, "section": c.quote.section, "why": c.not_checkable}
                    for c in s.claims
                    if c.not_checkable
                ],
                "findings": [
                    _finding_doc(f, published.judged(f, s.study))
                    for f in FINDINGS
                    if s.study in published.studies_of(f)
                ],  # fmt: skip
            }
        )
    return {"studies": out}


def _finding_doc(f: Finding, o: Outcome) -> dict[str, object]:
    return {
        "id": f.id,
        "own_reading": f.own_reading,
        "status": o.status,
        "claim": f.claim,
        "criterion": f.criterion,
        "numbers": list(o.numbers),
        "to_decide": list(dict.fromkeys(o.needs)),
    }


def _experiment_lines(e: Experiment) -> list[str]:
    lines = [f"    {e.where}: {e.shows}"]
    if e.example and not e.not_reproduced:
        lines.append(f"      reproduced by examples/{e.example} (the report's {e.section})")
    if e.not_reproduced:
        lines.append(f"      not reproduced: {e.not_reproduced}")
    if e.differs:
        lines.append(f"      differs: {e.differs}")
    return lines


def _unreproduced(values: list[PaperValue]) -> list[str]:
    """The published values no shipped example reproduces, grouped by the reason."""
    by: dict[str, list[PaperValue]] = {}
    for v in values:
        if v.not_reproduced:
            by.setdefault(v.not_reproduced, []).append(v)
    if not by:
        return []
    lines = [f"  published values no example reproduces ({sum(len(vs) for vs in by.values())} of {len(values)}):"]
    for why, vs in by.items():
        wheres = ", ".join(dict.fromkeys(v.where for v in vs))
        lines.append(f"    {len(vs)} of {wheres}: {why}")
    return lines


def _result_set(s: Study) -> list[str]:
    cases = published.cases(s.study)
    held = sum(len(c.values) for c in cases)
    left = published.left_out(s.study)
    defaults = ", ".join(f"{k} {v}" for k, v in obj(s.published, "defaults").items())
    lines = [
        f"  its numbers as results: {held} values in {len(cases)} cases ({'; '.join(c.name for c in cases)}), "
        "each number exact (two identical repetitions)"
        + (f"; a layer the study does not name is taken as: {defaults}" if defaults else "")
    ]
    if left:
        lines.append(f"  left out of them ({len(left)}):")
        lines += [f"    {x.value.where}, {x.value.what}: {x.why}" for x in left]
    return lines


def _finding_lines(f: Finding, o: Outcome) -> list[str]:
    mark = " (strata's own reading)" if f.own_reading else ""
    lines = [f"    {f.id}{mark}: {o.status}", f"      claim: {f.claim}", f"      held when: {f.criterion}"]
    if not o.numbers:
        lines.append("      the study's numbers hold nothing it compares")
    against = [n for n in o.numbers if n.endswith("(against)")]
    rest = [n for n in o.numbers if not n.endswith("(against)")]
    lines += [f"      {n}" for n in against + rest[:SHOWN]]
    if len(rest) > SHOWN:
        lines.append(f"      ... and {len(rest) - SHOWN} more")
    lines += [f"      to decide: {n}" for n in dict.fromkeys(o.needs)]
    return lines
