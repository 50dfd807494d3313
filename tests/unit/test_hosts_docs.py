"""The documents manager and agent exchange, read back through checked readers (hosts/part.py, client.py)."""

import json
import random

import pytest

from strata.core.jsondoc import ShapeError
from strata.hosts.client import doctor_row
from strata.hosts.part import PartRequest, output_doc


def test_part_request_round_trips_through_json():
    req = PartRequest("p1", "r1", "exp", {"path": "/data", "repetition": 2}, {"/f.job": "YQ=="}, 4, 5.0)
    assert PartRequest.from_json(json.loads(json.dumps(req.to_json()))) == req


def test_part_request_leaves_the_go_timeout_to_the_agent():
    doc = PartRequest("p1", "r1", "exp", {}, {}).to_json()
    assert "go_timeout_s" not in doc
    assert PartRequest.from_json(doc).go_timeout_s is None


def test_part_request_of_another_shape_is_a_shape_error():
    with pytest.raises(ShapeError, match="'trial' should be an object"):
        PartRequest.from_json({"part": "p", "run": "r", "trial": [1]})


def test_output_doc_fills_what_an_agent_left_out():
    o = output_doc({"index": 3, "out_dir": "instance-3", "returncode": 0, "start_time_s": 10, "end_time_s": None})
    assert o == {
        "index": 3,
        "out_dir": "instance-3",
        "returncode": 0,
        "stderr": "",
        "start_time_s": 10.0,
        "end_time_s": None,
        "facts": {},
    }
    with pytest.raises(ShapeError):
        output_doc(["not", "an", "object"])


def test_doctor_rows():
    assert doctor_row(["device", "loop", None]) == ("device", "loop", None)
    assert doctor_row(["tool", "fio", "not installed"]) == ("tool", "fio", "not installed")
    for bad in (["device", "loop"], ["device", 1, None], ["device", "loop", 3], "row", None):
        with pytest.raises(ShapeError):
            doctor_row(bad)


def test_readers_of_agent_documents_fuzz():
    """Any JSON value: a document of the expected shape or a ShapeError, never another exception."""
    rng = random.Random(46)

    def value(depth: int = 0) -> object:
        kind = rng.randrange(7 if depth < 3 else 5)
        if kind == 5:
            return [value(depth + 1) for _ in range(rng.randrange(4))]
        if kind == 6:
            keys = ["part", "run", "trial", "files", "index", "facts", "stderr", "start_time_s"]
            return {rng.choice(keys): value(depth + 1) for _ in range(3)}
        return [None, rng.random() < 0.5, rng.randrange(-5, 100), rng.random() * 100, rng.choice(["", "x", "/f"])][kind]

    def output_shape(o) -> None:
        assert isinstance(o["index"], int) and isinstance(o["returncode"], int) and not isinstance(o["index"], bool)
        assert isinstance(o["out_dir"], str) and isinstance(o["stderr"], str) and isinstance(o["facts"], dict)
        assert all(o[k] is None or isinstance(o[k], float) for k in ("start_time_s", "end_time_s")), o

    def doctor_shape(row) -> None:
        assert isinstance(row, tuple) and len(row) == 3 and all(isinstance(x, str) for x in row[:2])
        assert row[2] is None or isinstance(row[2], str)

    def request_shape(req) -> None:
        assert all(isinstance(x, str) for x in (req.part, req.run, req.experiment))
        assert isinstance(req.trial, dict) and isinstance(req.files, dict) and isinstance(req.first_index, int)
        assert req.go_timeout_s is None or isinstance(req.go_timeout_s, float)

    read = 0
    for _ in range(2000):
        v = value()
        checks = [(output_doc, output_shape), (doctor_row, doctor_shape)]
        checks += [(PartRequest.from_json, request_shape)] if isinstance(v, dict) else []
        for reader, shape in checks:
            try:
                got = reader(v)
            except ShapeError as e:
                assert str(e), reader
                continue
            shape(got)
            read += 1
    assert read > 100  # the generator makes documents of the expected shape too, not only refusals
