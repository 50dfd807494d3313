"""The seed studies as strata reproduces them (studies.yaml beside this module): what each measures, what
differs here from its method and why, each of its figures and tables with the example that reproduces
it (and how that differs) or why none does, each headline claim with the finding that checks it or why
none can here, and how its configurations read as strata's specs (`published`: the result set of its own
numbers, published.py).

One source for what the user reads in three places: docs/studies.md's tables are generated from it
(`python3 -m strata.analysis.studies.studies docs/studies.md` rewrites them between their markers; a unit test
keeps the page and the file equal), the report's section on the studies repeats each study's
differences (report/html.py), and `strata studies` prints all of it with every finding's verdict on the
study's own numbers (overview.py).
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from strata.analysis.studies import quotes
from strata.core.jsondoc import JsonObject, text

PATH = Path(__file__).with_name("studies.yaml")
BEGIN, END = "<!-- generated from src/strata/analysis/studies/studies.yaml: {} -->", "<!-- end of {} -->"


@dataclass(frozen=True)
class Claim:
    quote: quotes.Quote
    finding: str | None
    not_checkable: str | None


@dataclass(frozen=True)
class Experiment:
    """A figure or table of the study: the example that reproduces it, how, or why none does."""

    where: str
    shows: str
    example: str | None  # the example spec (examples/) that reproduces it
    section: str | None  # the report's counterpart: a figure or table id, finding:<id>, advice, placement
    differs: str  # what the example does otherwise than the study, here
    not_reproduced: str  # why it is not reproduced ("" when it is)


EXPERIMENT_KEYS = {"where", "shows", "example", "section", "differs", "not_reproduced"}


@dataclass(frozen=True)
class Study:
    study: str
    reference: str
    measures: str
    differs: tuple[tuple[str, str], ...]  # (aspect, what differs here and why)
    claims: tuple[Claim, ...] = field(default_factory=tuple)
    published: JsonObject = field(default_factory=dict)  # its configurations as specs (published.py)
    experiments: tuple[Experiment, ...] = field(default_factory=tuple)


@functools.cache
def load(path: Path = PATH) -> tuple[Study, ...]:
    """Every study, checked: each claim quotes its own study and names a finding or why none can."""
    from strata.analysis.findings.findings import FINDINGS

    ids = {f.id for f in FINDINGS}
    out = []
    for s in yaml.safe_load(path.read_text()):
        claims = []
        for c in s.get("claims") or []:
            q = quotes.by_id(c["quote"])
            if q.study != s["study"]:
                raise ValueError(f"{path.name}: study {s['study']} claims {q.id}, a quote of study {q.study}")
            if (c.get("finding") is None) == (c.get("not_checkable") is None):
                raise ValueError(f"{path.name}: claim {q.id} needs a finding or why it is not checkable, not both")
            if c.get("finding") is not None and c["finding"] not in ids:
                raise ValueError(f"{path.name}: claim {q.id} names finding {c['finding']}, which does not exist")
            claims.append(Claim(q, c.get("finding"), c.get("not_checkable")))
        differs = tuple((d["what"], d["text"]) for d in s["differs"])
        experiments = tuple(_experiment(e, s["study"], path) for e in s.get("experiments") or [])
        out.append(
            Study(
                s["study"], s["reference"], s["measures"], differs, tuple(claims), s.get("published") or {}, experiments
            )
        )
    return tuple(out)


def _experiment(e: JsonObject, study: str, path: Path) -> Experiment:
    """One figure or table, checked: reproduced (an example or the report's section) or why not."""
    name = f"{path.name}: study {study} {e.get('where')}"
    unknown = set(e) - EXPERIMENT_KEYS
    if unknown or not e.get("where") or not e.get("shows"):
        raise ValueError(f"{name}: needs where and shows, and only {', '.join(sorted(EXPERIMENT_KEYS))}")
    if not e.get("section") and not e.get("not_reproduced"):
        raise ValueError(f"{name}: names the report's section that reproduces it, or why it is not reproduced")
    return Experiment(
        text(e, "where"),
        text(e, "shows"),
        None if e.get("example") is None else text(e, "example"),
        None if e.get("section") is None else text(e, "section"),
        text(e, "differs"),
        text(e, "not_reproduced"),
    )


def by_study(study: str) -> Study | None:
    return next((s for s in load() if s.study == study), None)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def table() -> str:
    """docs/studies.md's table of the studies, with what differs here and why."""
    rows = ["| study | reference | what it measures | what differs here and why |", "|---|---|---|---|"]
    for s in load():
        differs = "<br>".join(f"**{what}**: {_cell(text)}" for what, text in s.differs)
        rows.append(f"| {s.study} | {_cell(s.reference)} | {_cell(s.measures)} | {differs} |")
    return "\n".join(rows)


def claims() -> str:
    """docs/studies.md's table of the headline claims: checked by which finding, or why not here."""
    rows = ["| study | the study says | section | checked here |", "|---|---|---|---|"]
    for s in load():
        for c in s.claims:
            here = f"`finding:{c.finding}`" if c.finding else f"not checkable here: {_cell(c.not_checkable or '')}"
            rows.append(f'| {s.study} | "{_cell(c.quote.quote)}" | {c.quote.section} | {here} |')
    return "\n".join(rows)


def experiments() -> str:
    """docs/studies.md's table of every figure and table: the example, the report's counterpart, what differs."""
    rows = [
        "| study | figure/table | what it shows | example | report section | what differs here |",
        "|---|---|---|---|---|---|",
    ]
    for s in load():
        for e in s.experiments:
            section = f"`{e.section}`" if e.section and not e.not_reproduced else f"not reproduced: {e.not_reproduced}"
            cells = (s.study, e.where, e.shows, e.example or "-", section, e.differs or "-")
            rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows)


BLOCKS = {"studies": table, "claims": claims, "experiments": experiments}


def render(page: str) -> str:
    """The page with each generated block rewritten between its markers."""
    for name, make in BLOCKS.items():
        begin, end = BEGIN.format(name), END.format(name)
        if begin not in page or end not in page:
            raise ValueError(f"the page lacks the markers of the {name} block: {begin} ... {end}")
        head, rest = page.split(begin, 1)
        _, tail = rest.split(end, 1)
        page = f"{head}{begin}\n{make()}\n{end}{tail}"
    return page


def main() -> None:
    ap = argparse.ArgumentParser(description="rewrite docs/studies.md's tables from studies.yaml")
    ap.add_argument("page", nargs="?", default="docs/studies.md")
    page = Path(ap.parse_args().page)
    page.write_text(render(page.read_text()))
    print(f"wrote {page}")


if __name__ == "__main__":
    main()
