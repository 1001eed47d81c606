"""Typed reads of state files (``prep.state.fields``): each reader takes exactly one JSON
type and otherwise raises ``FieldError`` naming the field by its path in the file, as a
forged or edited checkpoint's message must (``splits.train.sealed[2].n_tokens: ...``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from prep.state import fields as f
from prep.state.fields import FieldError

SHA = "0123456789abcdef" * 4


def problem(call: Any) -> str:
    with pytest.raises(FieldError) as e:
        call()
    return str(e.value)


def test_each_reader_takes_its_own_json_type() -> None:
    d = json.loads('{"n": 12, "x": 1.5, "i": 3, "b": true, "s": "v", "z": null, "h": "'
                   + SHA + '"}')
    assert f.integer(d, "n") == 12
    assert f.number(d, "x") == 1.5 and f.number(d, "i") == 3.0
    assert isinstance(f.number(d, "i"), float)
    assert f.flag(d, "b") is True
    assert f.text(d, "s") == "v"
    assert f.sha256(d, "h") == SHA
    assert (f.maybe_integer(d, "z"), f.maybe_text(d, "z"), f.maybe_sha256(d, "z")) == (
        None, None, None)
    assert (f.maybe_integer(d, "absent"), f.maybe_text(d, "absent")) == (None, None)


@pytest.mark.parametrize(("value", "message"), [
    ("12", "n: holds string '12', expected an integer"),
    (12.0, "n: holds number 12.0, expected an integer"),
    (True, "n: holds boolean True, expected an integer"),
    (None, "n: holds null None, expected an integer"),
    ([1], "n: holds list [1], expected an integer"),
    (-1, "n: holds -1, expected at least 0"),
])
def test_an_integer_is_never_a_string_a_float_or_a_boolean(value: object, message: str) -> None:
    assert problem(lambda: f.integer({"n": value}, "n")) == message


def test_minimum_and_default() -> None:
    assert f.integer({"n": -5}, "n", minimum=None) == -5
    assert problem(lambda: f.integer({"n": 2}, "n", minimum=3)) == "n: holds 2, expected at least 3"
    assert f.integer({}, "n", default=7) == 7
    assert problem(lambda: f.integer({}, "n")) == "n: is missing"
    assert f.text({}, "s", default="d") == "d" and f.flag({}, "b", default=False) is False


@pytest.mark.parametrize(("call", "message"), [
    (lambda: f.number({"x": "1"}, "x"), "x: holds string '1', expected a number"),
    (lambda: f.number({"x": False}, "x"), "x: holds boolean False, expected a number"),
    (lambda: f.flag({"b": 1}, "b"), "b: holds integer 1, expected true or false"),
    (lambda: f.text({"s": 5}, "s"), "s: holds integer 5, expected a string"),
    (lambda: f.sha256({"h": SHA.upper()}, "h"),
     f"h: holds string '{SHA.upper()[:39]}…, expected a SHA-256 (64 lowercase hex digits)"),
    (lambda: f.sha256({"h": SHA[:-1]}, "h"),
     f"h: holds string '{SHA[:39]}…, expected a SHA-256 (64 lowercase hex digits)"),
    (lambda: f.obj([], "root"), "root: holds list [], expected an object"),
    (lambda: f.as_scalar([1]), "holds list [1], expected a string, a number, true, false or null"),
])
def test_a_wrong_type_names_the_field_its_type_and_the_type_expected(call: Any, message: str
                                                                     ) -> None:
    assert problem(call) == message


def test_a_long_value_is_quoted_short() -> None:
    shown = f.shown("y" * 100)
    assert shown == "string '" + "y" * 39 + "…"
    assert f.shown({"a": 1}) == "object {'a': 1}"


def sealed(item: dict[str, Any]) -> int:
    return f.integer(item, "n_tokens")


def split(d: dict[str, Any]) -> tuple[int, ...]:
    return f.each(d, "sealed", f.as_object(sealed))


def test_nested_lists_and_mappings_name_the_path_in_the_file() -> None:
    doc = {"splits": {"train": {"sealed": [{"n_tokens": 1}, {"n_tokens": 2}, {"n_tokens": "3"}]},
                      "val": {"sealed": []}}}
    assert problem(lambda: f.mapping(doc, "splits", f.as_object(split))) == (
        "splits.train.sealed[2].n_tokens: holds string '3', expected an integer")
    doc["splits"]["train"]["sealed"][2] = {"n_tokens": 3}
    assert f.mapping(doc, "splits", f.as_object(split)) == {"train": (1, 2, 3), "val": ()}
    assert problem(lambda: f.nested({"a": {"b": {}}}, "a",
                                    lambda d: f.nested(d, "b", lambda e: f.text(e, "c")))) == (
        "a.b.c: is missing")
    assert problem(lambda: f.each({"l": [[1], "x"]}, "l", f.as_object(split))) == (
        "l[0]: holds list [1], expected an object")


def test_a_list_of_counts_a_list_of_strings_and_optional_objects() -> None:
    assert f.each({"l": [0, 4]}, "l", f.as_count) == (0, 4)
    assert problem(lambda: f.each({"l": [0, -4]}, "l", f.as_count)) == (
        "l[1]: holds -4, expected at least 0")
    assert f.each({"l": ["a"]}, "l", f.as_text) == ("a",)
    assert problem(lambda: f.each({"l": "ab"}, "l", f.as_text)) == (
        "l: holds string 'ab', expected a list")
    assert f.each({}, "l", f.as_text, default=()) == ()
    assert f.maybe_nested({"o": None}, "o", split) is None
    assert f.maybe_nested({"o": {"sealed": [{"n_tokens": 9}]}}, "o", split) == (9,)
    assert problem(lambda: f.nested({"o": 3}, "o", split)) == (
        "o: holds integer 3, expected an object")


def test_within_joins_paths_with_dots_except_before_an_index() -> None:
    assert str(FieldError("n", "bad").within("a")) == "a.n: bad"
    assert str(FieldError("[0].n", "bad").within("a")) == "a[0].n: bad"
    assert str(FieldError("", "bad").within("a")) == "a: bad"
    assert str(FieldError("", "bad")) == "bad"
    assert FieldError("x", "p").path == "x" and isinstance(FieldError("x", "p"), ValueError)
