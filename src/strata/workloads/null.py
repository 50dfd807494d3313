"""The null workload: runs the whole pipeline without doing I/O (fio's engines/null.c).

Each instance writes a small JSON of what it was asked; metrics are fixed so
unit tests of the runner, store and flags need no root, device or fio.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field

from strata.errors import TrialFailure
from strata.spec.model import Strict
from strata.workloads.base import InstanceOutput, Parsed, Target


class NullSpec(Strict):
    type: Literal["null"] = "null"
    name: str = "null"
    iops: float = Field(default=1000.0, description="the fixed result each instance reports")
    fail: bool = Field(default=False, description="exit non-zero, to test failure handling")
    sleep_s: float = 0.0


class Null:
    name = "null"

    def parse_spec(self, raw: dict, base_dir: Path) -> NullSpec:
        return NullSpec.model_validate(raw)

    def available(self, host: dict) -> str | None:
        return None

    def direct_io(self, spec: NullSpec) -> bool:
        return False

    def estimate_s(self, spec: NullSpec) -> float:
        return spec.sleep_s + 0.1

    def command(self, spec: NullSpec, load, target: Target, instance: int) -> list[str]:
        code = (
            "import json,sys,time;time.sleep(%r);"
            "json.dump({'iops': %r, 'target': %r, 'instance': %d}, open(%r + '/null.json', 'w'));"
            "sys.exit(%d)"
        ) % (spec.sleep_s, spec.iops, target.path, instance, target.out_dir, 3 if spec.fail else 0)
        return [sys.executable, "-c", code]

    def stage(self, spec: NullSpec, out_dir: Path) -> None:
        pass

    def parse(self, spec: NullSpec, outputs: list[InstanceOutput]) -> Parsed:
        total = 0.0
        for o in outputs:
            if o.returncode != 0:
                raise TrialFailure("tool_error", f"null instance {o.index} exited {o.returncode}", o.stderr)
            total += json.loads((o.out_dir / "null.json").read_text())["iops"]
        return Parsed(metrics={"kind": "null", "primary": {"iops": total}}, moved_bytes={"read": 0, "write": 0})


NULL = Null()
