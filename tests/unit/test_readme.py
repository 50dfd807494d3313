"""The README's lists that the code owns stay equal to the code."""

import re
from pathlib import Path

from strata.errors import categories_markdown

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def test_failure_categories_table_is_the_codes():
    m = re.search(r"<!-- failure-categories:[^>]*-->\n(.*?)\n<!-- /failure-categories -->", README, re.S)
    assert m, "the README lost its failure-categories block"
    assert m.group(1) == categories_markdown(), "regenerate it from strata.errors.categories_markdown()"
