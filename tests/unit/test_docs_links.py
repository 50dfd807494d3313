"""Every relative link in README.md and docs/*.md resolves: the file exists inside the repository, and an
#anchor names a heading of the target page (GitHub's rule). External http(s) and mailto links are skipped."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def _prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where `[x](y)` is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: link markup and code ticks dropped, lower case, punctuation other
    than '-' and '_' removed, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    out, seen = set(), {}
    for m in HEADING.finditer(text):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out | set(HTML_ANCHOR.findall(text))


def links(page: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(page.read_text()))]


def broken(page: Path) -> list[str]:
    bad = []
    for target in links(page):
        if re.match(r"(https?|mailto):", target) or not target:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.is_relative_to(ROOT):
            bad.append(f"{target}: outside the repository")
        elif not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    assert broken(page) == []


def test_every_docs_page_is_reachable_from_the_readme():
    reached, todo = set(), [ROOT / "README.md"]
    while todo:
        page = todo.pop()
        if page in reached:
            continue
        reached.add(page)
        for target in links(page):
            path = target.partition("#")[0]
            if path and not re.match(r"(https?|mailto):", target):
                dest = (page.parent / path).resolve()
                if dest.suffix == ".md" and dest.exists() and dest.parent in (ROOT, ROOT / "docs"):
                    todo.append(dest)
    assert [str(p.relative_to(ROOT)) for p in PAGES if p not in reached] == []


def test_slug_follows_github():
    assert slug("Can I trust the numbers? The validity flags") == "can-i-trust-the-numbers-the-validity-flags"
    assert slug("The storage host on another node (`host:`)") == "the-storage-host-on-another-node-host"
    assert slug("Repetitions: fixed, or until decided") == "repetitions-fixed-or-until-decided"
