"""Every sentence strata quotes from the seed studies, as data (quotes.yaml beside this module).

A quotation anywhere strata speaks of the studies (the findings, paper.yaml's notes, docs/studies.md, the
examples) is one of these, or a part of one with "..." for what it leaves out; everything else strata
says of a study is its own words, unquoted. `contains` tells whether a quotation is such a part.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

PATH = Path(__file__).with_name("quotes.yaml")
STUDIES = ("001", "002", "003", "004")


@dataclass(frozen=True)
class Quote:
    id: str
    study: str
    section: str
    quote: str


@functools.cache
def load(path: Path = PATH) -> tuple[Quote, ...]:
    """Every quote, checked: ValueError naming the first malformed or repeated one."""
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, list):
        raise ValueError(f"{path.name}: expected a list of quotes")
    out, seen = [], set()
    for i, q in enumerate(raw):
        if not isinstance(q, dict) or set(q) != {"id", "study", "section", "quote"}:
            raise ValueError(f"{path.name} entry {i}: needs exactly id, study, section and quote")
        if q["study"] not in STUDIES or not all(isinstance(q[k], str) and q[k].strip() for k in q):
            raise ValueError(f"{path.name} entry {i} ({q.get('id')}): a study of {STUDIES} and non-empty strings")
        if q["id"] in seen:
            raise ValueError(f"{path.name} entry {i}: id {q['id']} given twice")
        seen.add(q["id"])
        out.append(Quote(q["id"], q["study"], str(q["section"]), q["quote"]))
    return tuple(out)


def by_id(qid: str) -> Quote:
    for q in load():
        if q.id == qid:
            return q
    raise KeyError(f"no quote {qid!r} in {PATH.name}")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().strip(".,;:").lower()


def contains(quote: str, quotation: str) -> bool:
    """`quotation` is `quote` or a part of it: its pieces between "..." appear in order (case and spacing
    aside)."""
    whole, pos = _norm(quote), 0
    for piece in (p for p in (_norm(x) for x in quotation.split("...")) if p):
        i = whole.find(piece, pos)
        if i < 0:
            return False
        pos = i + len(piece)
    return pos > 0


def source_of(quotation: str, study: str | None = None) -> Quote | None:
    """The quote a quotation comes from (of `study` when given), or None: not a study's words."""
    return next((q for q in load() if (study is None or q.study == study) and contains(q.quote, quotation)), None)
