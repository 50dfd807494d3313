"""core/jsondoc.py: each reader returns the member in its type, its default when missing or null, and a
ShapeError naming the member when the document holds another type."""

import random

import pytest

from strata.core.jsondoc import ShapeError, arr, as_obj, flag, num, obj, text, whole

DOC = {"o": {"a": 1}, "l": [1, "x"], "s": "hi", "n": 2.5, "i": 3, "f": 4.0, "b": True, "z": None}


def test_readers_return_members_in_their_type():
    assert obj(DOC, "o") == {"a": 1}
    assert arr(DOC, "l") == [1, "x"]
    assert text(DOC, "s") == "hi"
    assert num(DOC, "n") == 2.5 and num(DOC, "i") == 3.0
    assert whole(DOC, "i") == 3 and whole(DOC, "f") == 4
    assert flag(DOC, "b") is True
    assert as_obj(DOC) is DOC


def test_missing_or_null_members_are_their_defaults():
    for key in ("z", "absent"):
        assert obj(DOC, key) == {} and obj(DOC, key, {"d": 1}) == {"d": 1}
        assert arr(DOC, key) == []
        assert text(DOC, key) == "" and text(DOC, key, "d") == "d"
        assert num(DOC, key) is None and num(DOC, key, 1.0) == 1.0
        assert whole(DOC, key) is None and whole(DOC, key, 7) == 7
        assert flag(DOC, key) is False and flag(DOC, key, True) is True


@pytest.mark.parametrize(
    "reader,key",
    [(obj, "s"), (arr, "o"), (text, "n"), (num, "b"), (num, "s"), (whole, "n"), (whole, "b"), (flag, "i")],
)
def test_a_member_of_another_type_is_a_shape_error_naming_it(reader, key):
    with pytest.raises(ShapeError, match=repr(key)):
        reader(DOC, key)


def test_as_obj_refuses_a_non_object():
    with pytest.raises(ShapeError, match="the document"):
        as_obj([1])


def test_fuzz_readers_never_raise_anything_but_shape_errors():
    rng = random.Random(20261128)
    values = [None, True, 0, -1, 2.5, float("nan"), "", "x", [], [1], {}, {"k": 1}]
    # each reader: the types it returns, and whether a value is one it must take (None: missing, its default)
    takes = {
        obj: (dict, lambda v: isinstance(v, dict)),
        arr: (list, lambda v: isinstance(v, list)),
        text: (str, lambda v: isinstance(v, str)),
        num: (float, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)),
        whole: (
            int,
            lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
        ),
        flag: (bool, lambda v: isinstance(v, bool)),
    }
    for _ in range(2000):
        v = rng.choice(values)
        doc = {"k": v}
        for reader, (kind, fits) in takes.items():
            try:
                got = reader(doc, "k")
            except ShapeError as e:
                assert v is not None and not fits(v), (reader.__name__, v)  # only a value of another type
                assert "'k' should be" in str(e)
                continue
            if v is None:  # null is the default: {} or [] or "" or False, and None for a number
                assert got in ({}, [], "", False, None), (reader.__name__, got)
            else:
                assert fits(v) and isinstance(got, kind) and (got == v or got != got), (reader.__name__, v, got)
                assert kind is bool or not isinstance(got, bool), (reader.__name__, got)
