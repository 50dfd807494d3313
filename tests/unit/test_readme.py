"""The documentation's lists that the code owns stay equal to the code (the failure categories live in
docs/validity.md, linked from the README)."""

import re
from pathlib import Path

from strata.core.errors import categories_markdown

VALIDITY = (Path(__file__).resolve().parents[2] / "docs" / "validity.md").read_text()


def test_failure_categories_table_is_the_codes():
    m = re.search(r"<!-- failure-categories:[^>]*-->\n(.*?)\n<!-- /failure-categories -->", VALIDITY, re.S)
    assert m, "docs/validity.md lost its failure-categories block"
    assert m.group(1) == categories_markdown(), "regenerate it from strata.core.errors.categories_markdown()"


def test_the_measured_section_is_a_short_table_with_links():
    """The README is a user's guide: its figures are a short table, each row linking the page that holds the
    arithmetic (docs/overhead.md, docs/repetitions.md, ...), not paragraphs of it."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    m = re.search(r"^## Measured\n(.*?)\n(?=## )", readme, re.S | re.M)
    assert m, "README.md lost its Measured section"
    lines = ("## Measured\n" + m.group(1)).rstrip("\n").split("\n")
    assert len(lines) <= 15, f"the Measured section has {len(lines)} lines: move the detail to the page it links"
    long = [line[:60] for line in lines if len(line) > 200]
    assert not long, f"lines over 200 characters: {long}"
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| what ")]
    assert rows and all("](docs/" in row for row in rows), "every figure links the page that gives its arithmetic"
