"""The seed studies as strata reproduces them (studies.yaml beside this module): what each measures, what
differs here from its method and why, and each headline claim with the finding that checks it or why
none can here.

One source for what the user reads in two places: docs/studies.md's tables are generated from it
(`python3 -m strata.analysis.studies docs/studies.md` rewrites them between their markers; a unit test
keeps the page and the file equal), and the report's section on the studies repeats each study's
differences (report/html.py).
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from strata.analysis import quotes

PATH = Path(__file__).with_name("studies.yaml")
BEGIN, END = "<!-- generated from src/strata/analysis/studies.yaml: {} -->", "<!-- end of {} -->"


@dataclass(frozen=True)
class Claim:
    quote: quotes.Quote
    finding: str | None
    not_checkable: str | None


@dataclass(frozen=True)
class Study:
    study: str
    reference: str
    measures: str
    differs: tuple[tuple[str, str], ...]  # (aspect, what differs here and why)
    claims: tuple[Claim, ...] = field(default_factory=tuple)


@functools.cache
def load(path: Path = PATH) -> tuple[Study, ...]:
    """Every study, checked: each claim quotes its own study and names a finding or why none can."""
    from strata.analysis.findings import FINDINGS

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
        out.append(Study(s["study"], s["reference"], s["measures"], differs, tuple(claims)))
    return tuple(out)


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


BLOCKS = {"studies": table, "claims": claims}


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
