"""`--json`: a command's output as one JSON document on stdout, for scripts and CI jobs.

Each document names its schema first, `"schema": "strata.<command>/<version>"`; the schemas are in
strata/cli/schemas.py (and docs/json.md, generated from them). A version changes only when a member is
removed or changes meaning; members are added within a version. NaN and infinities, which JSON has no
word for, are written as null.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping

from strata.cli.schemas import schema_id


def add_json_argument(
    p: argparse.ArgumentParser, help: str = "print one JSON document instead of the text (its schema: docs/json.md)"
) -> None:
    p.add_argument("--json", action="store_true", help=help)


def document(command: str, payload: Mapping[str, object]) -> dict[str, object]:
    """The payload under its schema's name, with every number JSON can hold."""
    out = finite({"schema": schema_id(command), **payload})
    assert isinstance(out, dict)
    return out


def emit(command: str, payload: Mapping[str, object]) -> None:
    json.dump(document(command, payload), sys.stdout, indent=1, allow_nan=False)
    sys.stdout.write("\n")


def finite(v: object) -> object:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [finite(x) for x in v]
    return v
