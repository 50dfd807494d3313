"""The schema of each command's `--json` document (JSON Schema, draft 2020-12), one version per command.

A document names its schema first: `"schema": "strata.show/1"`. Within a version members are only added
(every object allows members it does not list); a member removed, renamed or changed in meaning is a new
version. tests/unit/test_json_output.py holds each command's output to its schema, and each schema to its
version: a schema that changes while its version does not fails there. docs/json.md is generated from these.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

Schema = dict[str, Any]

VERSIONS = {"show": 1, "compare": 1, "validate": 1, "doctor": 1, "studies": 1, "report": 1}

STR: Schema = {"type": "string"}
NUM: Schema = {"type": "number"}
INT: Schema = {"type": "integer"}
BOOL: Schema = {"type": "boolean"}


def opt(s: Schema) -> Schema:
    """s, or null."""
    return {"anyOf": [s, {"type": "null"}]}


def arr(s: Schema) -> Schema:
    return {"type": "array", "items": s}


def obj(_doc: str = "", **props: Schema) -> Schema:
    """An object with these members, all required; members it does not list are allowed (added later)."""
    out: Schema = {"type": "object", "required": sorted(props), "properties": props}
    if _doc:
        out["description"] = _doc
    return out


def of(s: Schema) -> Schema:
    """An object whose every member is s (a map)."""
    return {"type": "object", "additionalProperties": s}


LABELS = of(STR)
FAILURE = obj(category=opt(STR), message=STR)
WARNING = obj(flag=opt(STR), message=STR)
CHECK = obj(layer=STR, name=STR, status={"enum": ["ok", "no", "not probed"]}, reason=opt(STR))

PAYLOADS: dict[str, Schema] = {
    "show": obj(
        "strata show --json: one row per stored trial, as the table, with the values unrounded",
        results=STR,
        columns=arr(STR),
        rows=arr(
            obj(
                trial_id=STR,
                stack=STR,
                labels=LABELS,
                repetition=INT,
                status=STR,
                values=of(NUM),
                wa=opt(NUM),
                flags=arr(STR),
                failure=opt(FAILURE),
                warnings=arr(WARNING),
            )
        ),
        legend=obj(flags=STR, wa=STR, failure_categories=of(obj(meaning=STR, fix=STR))),
    ),
    "compare": obj(
        "strata compare --json: B relative to A, configuration by configuration, and the gate's decision",
        a=STR,
        b=STR,
        matches=arr(
            obj(
                configuration=STR,
                labels=LABELS,
                unit=STR,
                a=obj(mean=opt(NUM), n=INT),
                b=obj(mean=opt(NUM), n=INT),
                change=opt(NUM),
                ci_low=opt(NUM),
                ci_high=opt(NUM),
                margin=NUM,
                higher_is_better=BOOL,
                status={"enum": ["higher", "lower", "same", "undecided"]},
                b_is={"enum": ["better", "worse", "same", "undecided"]},
                differs=arr(STR),
            )
        ),
        only_a=arr(STR),
        only_b=arr(STR),
        unit_mismatch=arr(STR),
        gate=opt(obj(fail_on={"enum": ["worse", "regression", "undecided"]}, failing=arr(STR))),
    ),
    "validate": obj(
        "strata validate --json: the plan, every trial listed",
        experiment=STR,
        scale={"enum": ["full", "smoke"]},
        part=opt(obj(only=STR, of_trials=INT)),
        trials=arr(obj(id=STR, label=STR, labels=LABELS, repetition=INT, unsupported=opt(STR))),
        runnable=INT,
        writes=arr(STR),
        stacks=arr(obj(stack=STR, trials=INT)),
        repetitions={"type": "object", "required": ["mode"], "properties": {"mode": {"enum": ["fixed", "auto"]}}},
        estimate_s=obj(first_rounds=NUM, at_most=NUM),
        order_seed=INT,
        skipped=arr(obj(label=STR, reason=STR)),
    ),
    "doctor": {
        "description": "strata doctor --json: this host's checks, or a cluster's (--kubernetes), or every host's "
        "of an experiment (--hosts): one of the three",
        "oneOf": [
            obj(host=of({}), checks=arr(CHECK), note=opt(STR)),
            obj(
                kubernetes=obj(
                    kubeconfig=STR,
                    context=opt(STR),
                    healthy=BOOL,
                    rows=arr(obj(what=STR, value=STR, problem=opt(STR))),
                )
            ),
            obj(
                hosts=arr(obj(host=STR, node=of({}), agent=STR, facts=of({}), clock=of({}), checks=arr(CHECK))),
                hosts_failed=INT,
            ),
        ],
    },
    "studies": obj(
        "strata studies --json: each seed study, its experiments and every finding's verdict on its numbers",
        studies=arr(
            obj(
                study=STR,
                reference=STR,
                measures=STR,
                differs=arr(obj(what=STR, why=STR)),
                experiments=arr(
                    obj(
                        where=STR,
                        shows=STR,
                        example=opt(STR),
                        section=opt(STR),
                        not_reproduced=opt(STR),
                        differs=opt(STR),
                    )
                ),
                published_values=INT,
                unreproduced=arr(obj(where=STR, why=STR)),
                result_cases=arr(obj(name=STR, values=INT)),
                left_out=arr(obj(where=STR, what=STR, why=STR)),
                unchecked_claims=arr(obj(quote=STR, section=STR, why=STR)),
                findings=arr(
                    obj(
                        id=STR,
                        own_reading=BOOL,
                        status=STR,
                        claim=STR,
                        criterion=STR,
                        numbers=arr(STR),
                        to_decide=arr(STR),
                    )
                ),
            )
        ),
    ),
    "report": obj(
        "strata report --json: the terminal summary, every configuration listed (the files are written as ever)",
        results=STR,
        report=STR,
        smoke=INT,
        trials=obj(total=INT, ok=INT, failed=INT, unsupported=INT),
        hosts=INT,
        configurations=arr(
            obj(
                stack=STR,
                tag=opt(STR),
                labels=LABELS,
                unit=STR,
                mean=opt(NUM),
                half_width=opt(NUM),
                n=INT,
                x_raw=opt(NUM),
                flags=of(INT),
            )
        ),
        warnings=arr(obj(kind=STR, text=STR, note=BOOL, items=arr(STR))),
        advice=arr(STR),
        findings=arr(obj(id=STR, status=STR, detail=STR)),
        beside=arr(STR),
    ),
}


def schema_id(command: str) -> str:
    return f"strata.{command}/{VERSIONS[command]}"


def schema(command: str) -> Schema:
    """The whole document's schema: its payload with the `schema` member that names it."""
    payload = PAYLOADS[command]
    head: Schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": schema_id(command),
        "type": "object",
        "required": ["schema"],
        "properties": {"schema": {"const": schema_id(command)}},
    }
    return {**head, "allOf": [payload]}


def fingerprint(command: str) -> str:
    """What a version holds: a short hash of its schema (tests/unit/test_json_output.py pins it per version)."""
    blob = json.dumps(schema(command), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
