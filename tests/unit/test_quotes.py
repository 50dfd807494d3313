"""Only the studies' words in quotes (issue 35): every quotation strata makes of a study, in the findings,
in paper.yaml's notes, in docs/studies.md and in the examples, is one of quotes.yaml's (each checked
against the study's text when it was added; the project ships the quotes, never the papers). Anything
else strata says of a study is its own words, unquoted."""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import yaml

from strata.analysis.findings.findings import FINDINGS
from strata.analysis.studies import published, quotes
from strata.analysis.studies.paper import PATH as PAPER

ROOT = Path(__file__).resolve().parents[2]
DOUBLE = re.compile(r'"([^"]{3,400}?)"')  # over lines too: a paragraph may break a quotation
# a note's quotation: single quotes at word boundaries (an apostrophe inside a word is not one)
SINGLE = re.compile(r"(?:^|(?<=[\s(:]))'(.+?)'(?=[;,.)\s]|$)")
ANALYSIS = [
    "findings/findings.py",
    "findings/checks_apps.py",
    "findings/checks_containers.py",
    "findings/checks_cpu.py",
    "findings/checks_fs.py",
    "advice/placement.py",
]


def _outside_code(text: str) -> str:
    """Markdown without its code spans and blocks (a spec's strings are not quotations)."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return re.sub(r"`[^`\n]*`", " ", text)


def _comments(yaml_text: str) -> str:
    """The comments of a YAML file, joined (a quotation may run over lines)."""
    return " ".join(line.split("#", 1)[1].strip() for line in yaml_text.splitlines() if "#" in line)


def _py_words(path: Path) -> str:
    """The docstrings and comments of a module (its code's strings are not quotations)."""
    src = path.read_text()
    docs = [
        ast.get_docstring(n) or ""
        for n in ast.walk(ast.parse(src))
        if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
    ]  # noqa: E501
    comments = [t.string[1:] for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
    return " ".join(docs + comments)


def _unknown(spans, study=None) -> list[str]:
    return [s for s in spans if quotes.source_of(s, study) is None]


def test_the_quotes_load_with_unique_ids_and_their_sections():
    qs = quotes.load()
    assert len(qs) >= 80 and len({q.id for q in qs}) == len(qs)
    assert {q.study for q in qs} == set(quotes.STUDIES)


def test_every_finding_quotes_its_own_study():
    for f in FINDINGS:
        if f.quote is None:
            continue
        q = quotes.by_id(f.quote)
        assert f"study {q.study}" in f.source, f"{f.id}: quotes study {q.study}, its source is {f.source}"
        assert published.said(f).startswith(f'"{q.quote}"')


def test_every_quotation_in_paper_yaml_notes_is_a_quote_of_its_study():
    bad = []
    for v in yaml.safe_load(PAPER.read_text()):
        bad += [f"{v['where']}: {s}" for s in _unknown(SINGLE.findall(v.get("note") or ""), v["study"])]
    assert not bad, bad


def test_every_quotation_in_docs_studies_md_is_a_quote():
    spans = DOUBLE.findall(_outside_code((ROOT / "docs" / "studies.md").read_text()))
    assert spans, "docs/studies.md quotes the studies' headline claims"
    assert not _unknown(spans)


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")))
def test_every_quotation_in_an_example_is_a_quote(example):
    assert not _unknown(DOUBLE.findall(_comments((ROOT / "examples" / example).read_text())))


@pytest.mark.parametrize("module", ANALYSIS)
def test_every_quotation_in_the_findings_code_is_a_quote(module):
    assert not _unknown(DOUBLE.findall(_py_words(ROOT / "src" / "strata" / "analysis" / module)))


def test_words_no_study_says_are_refused():
    """Regression: placement.py quoted a sentence no study contains; the three spellings of study 001's
    title are gone from the examples with it."""
    assert quotes.source_of("8 Cassandra containers on one server against 4 + 4 on two") is None
    assert quotes.source_of("the loop-lvm reports 1.4x the IOPS of a RAW block device", "003") is not None
    assert quotes.source_of("the loop-lvm reports 1.4x the IOPS of a RAW block device", "001") is None
    assert quotes.contains("a b c d e", "a ... d") and not quotes.contains("a b c d e", "d ... a")
    examples = " ".join(p.read_text() for p in (ROOT / "examples").glob("*.yaml"))
    assert "Performance comparison of VMs" not in examples and "Performance evaluation of" not in examples
