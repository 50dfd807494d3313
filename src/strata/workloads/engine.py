"""Where the Filebench-compatible engine (`strata-wml`, built from engine/) is.

Looked up in this order: $STRATA_WML, the PATH (scripts/install links it into
.venv/bin), then the release build beside this checkout.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO_BUILD = Path(__file__).resolve().parents[3] / "engine" / "target" / "release" / "strata-wml"


def engine_binary() -> Path | None:
    env = os.environ.get("STRATA_WML")
    if env:
        return Path(env) if Path(env).is_file() else None
    found = shutil.which("strata-wml")
    if found:
        return Path(found).resolve()
    return REPO_BUILD if REPO_BUILD.is_file() else None
