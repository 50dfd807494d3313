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
        "strata show --json: one row per stored trial, as the table, with the values unrounded; `values` is keyed "
        "by the table's column headings, each value in its heading's unit (IOPS, MiB/s, us: microseconds)",
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
                durability=opt(STR),
                failure=opt(FAILURE),
                warnings=arr(WARNING),
            )
        ),
        legend=obj(flags=STR, wa=STR, durability=STR, failure_categories=of(obj(meaning=STR, fix=STR))),
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
        preconditions=arr(STR),
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
                durability=opt(STR),
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


def _type(s: Schema) -> str:
    if "anyOf" in s:
        return " or ".join(_type(x) for x in s["anyOf"])
    if "enum" in s:
        return " | ".join(json.dumps(v) for v in s["enum"])
    if "const" in s:
        return json.dumps(s["const"])
    t = s.get("type", "any")
    if t == "array":
        return f"array of {_type(s['items'])}"
    if t == "object" and "additionalProperties" in s:
        return f"map of {_type(s['additionalProperties'])}"
    return str(t)


def _members(s: Schema, path: str = "") -> list[str]:
    """One line per member, its path (`rows[].labels`) and type, depth first."""
    if "anyOf" in s:
        inner = [x for x in s["anyOf"] if x.get("type") != "null"]
        return _members(inner[0], path) if len(inner) == 1 else []
    if s.get("type") == "array":
        return _members(s["items"], path + "[]")
    if "oneOf" in s:
        out = []
        for i, alt in enumerate(s["oneOf"], 1):
            out.append(f"- one of ({i}):")
            out += ["  " + line for line in _members(alt, path)]
        return out
    out = []
    for name, sub in s.get("properties", {}).items():
        here = f"{path}.{name}" if path else name
        out.append(f"- `{here}`: {_type(sub)}")
        out += _members(sub, here) if sub.get("type") in ("object", "array") or "anyOf" in sub else []
    return out


def markdown() -> str:
    """docs/json.md (tests/unit/test_json_output.py keeps the file equal to this)."""
    lines = [
        "# JSON output",
        "",
        "<!-- generated from src/strata/cli/schemas.py: python -c 'from strata.cli.schemas import markdown; "
        'print(markdown(), end="")\' > docs/json.md -->',
        "",
        "`strata show`, `compare`, `validate`, `doctor`, `studies` and `report` take `--json`: the command prints one",
        "JSON document on stdout instead of its text, and exits as it would otherwise (docs/commands.md). An error",
        "is still a message on stderr with exit 2, never a document. Each document names its schema first,",
        '`"schema": "strata.<command>/<version>"`. Within a version members are only added; a member removed,',
        "renamed or changed in meaning is a new version. Numbers JSON cannot hold (NaN, infinities) are null.",
        "Each schema below is JSON Schema (draft 2020-12); every member listed is present (null where marked).",
        "`strata export --ndjson FILE` writes each stored trial whole, one per line, in the stored result's own",
        "format (its `schema_version`: src/strata/results/schema.py).",
    ]
    for command in VERSIONS:
        s = schema(command)
        lines += ["", f"## `{schema_id(command)}`", "", PAYLOADS[command].get("description", "") + ".", ""]
        lines += _members(PAYLOADS[command])
        lines += ["", "<details><summary>the schema</summary>", "", "```json", json.dumps(s, indent=1), "```", "",
                  "</details>"]  # fmt: skip
    return "\n".join(lines) + "\n"
