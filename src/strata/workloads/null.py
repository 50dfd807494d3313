"""The null workload: runs the whole pipeline without doing I/O (fio's engines/null.c).

Each instance writes a small JSON of what it was asked; metrics are fixed so
unit tests of the runner, store and flags need no root, device or fio.
"""

from __future__ import annotations

import json
import sys
from typing import Literal

from pydantic import Field

from strata.core.errors import TrialFailure
from strata.core.instances import InstanceOutput, Target
from strata.core.metrics import Metric, MetricSchema, Show
from strata.core.params import Load, Strict
from strata.workloads.base import Parsed, ToolWorkload, Workload, headline


class NullParams(Strict):
    type: Literal["null"] = "null"
    name: str = "null"
    iops: float = Field(default=1000.0, description="the fixed result each instance reports")
    fail: bool = Field(default=False, description="exit non-zero, to test failure handling")
    sleep_s: float = Field(default=0.0, ge=0, le=3600)
    jitter: float = Field(
        default=0.0, ge=0, le=0.9, description="each instance reports iops x (1 +- jitter), at random"
    )
    path_factor: dict[str, float] = Field(
        default_factory=dict,
        description="iops x factor when the target's path contains the key: stacks that differ, for unit tests of "
        "comparisons",
    )


class Null(ToolWorkload[NullParams]):
    name = "null"
    params = NullParams
    metrics = MetricSchema((Metric("iops", "total", "IOPS", "higher", headline=True, show=Show("IOPS", digits=0)),))

    def estimate_s(self, params: NullParams) -> float:
        return params.sleep_s + 0.1

    def command(self, params: NullParams, load: Load, target: Target, instance: int) -> list[str]:
        iops = params.iops
        for part, factor in params.path_factor.items():
            iops *= factor if part in str(target.path) else 1.0
        code = (
            "import json,random,sys,time;time.sleep(%r);"
            "json.dump({'iops': %r * (1 + %r * random.uniform(-1, 1)), 'target': %r, 'instance': %d},"
            " open(%r + '/null.json', 'w'));"
            "sys.exit(%d)"
        ) % (params.sleep_s, iops, params.jitter, target.path, instance, target.out_dir, 3 if params.fail else 0)
        return [sys.executable, "-c", code]

    def parse(self, params: NullParams, outputs: list[InstanceOutput]) -> Parsed:
        total = 0.0
        for o in outputs:
            if o.returncode != 0:
                raise TrialFailure("tool_error", f"null instance {o.index} exited {o.returncode}", o.stderr)
            total += json.loads((o.out_dir / "null.json").read_text())["iops"]
        return Parsed(
            metrics={"kind": "null", "primary": headline(total, "IOPS", "iops", iops=total)},
            moved_bytes={"read": 0, "write": 0},
        )


NULL = Null()
PLUGIN: Workload[NullParams] = NULL  # the registry's entry (workloads/__init__.py), checked against the core
