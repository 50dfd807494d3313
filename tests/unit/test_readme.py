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
