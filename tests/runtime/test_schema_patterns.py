"""Schema patterns run on RE2 (tools/_patterns.py) in every keyword that matches one, and a pattern RE2
cannot take makes the schema invalid (tools.check_schema), with the problem in one line."""

from __future__ import annotations

import time

import pytest

from tools import InvalidSchemaError, Schema, SchemaValidationError, check_schema, create_tool

EVIL = "^(a+)+$"
WORD = "a" * 30 + "!"
"""About 40 s for Python's `re` against EVIL, microseconds for RE2."""
QUICK = 5.0
"""Seconds a check of WORD may take: far under `re`'s, far over what a loaded machine adds to RE2's."""


def refused(schema: Schema, value) -> str:
    with pytest.raises(SchemaValidationError) as caught:
        schema.validate(value)
    return str(caught.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": EVIL},
        {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}, "additionalProperties": False},
        {"type": "object", "allOf": [{"patternProperties": {EVIL: True}}], "unevaluatedProperties": False},
        {"type": "object", "propertyNames": {"pattern": EVIL}},
    ],
    ids=["pattern", "patternProperties+additionalProperties", "unevaluatedProperties", "propertyNames"],
)
def test_every_keyword_that_matches_a_pattern_is_fast_and_right(schema):
    checked = Schema(schema)
    value = WORD if schema["type"] == "string" else {WORD: 1}
    started = time.perf_counter()
    refused(checked, value)
    assert time.perf_counter() - started < QUICK
    good = "a" * 30 if schema["type"] == "string" else {"a" * 30: 1}
    assert checked.validate(good) == good


def test_pattern_properties_still_check_the_values_they_match():
    checked = Schema(
        {"type": "object", "patternProperties": {"^名": {"type": "string"}}, "additionalProperties": False}
    )
    assert checked.validate({"名前": "山田"}) == {"名前": "山田"}
    assert "is not of type 'string'" in refused(checked, {"名前": 1})
    assert "does not match any of the regexes" in refused(checked, {"이름": "김"})


def test_ecma_unicode_escapes_are_read_as_code_points():
    chinese = Schema({"type": "string", "pattern": "^[\\u4e00-\\u9fa5]+$"})
    assert chinese.validate("巴黎") == "巴黎"
    assert "does not match" in refused(chinese, "Paris")
    literal = Schema({"type": "string", "pattern": "^\\\\u0041$"})  # an escaped backslash, then "u0041"
    assert literal.validate("\\u0041") == "\\u0041"


def test_text_that_is_not_utf_8_does_not_match_and_does_not_raise():
    assert "does not match" in refused(Schema({"type": "string", "pattern": "^a+$"}), "a\ud800")


@pytest.mark.parametrize(
    ("schema", "said"),
    [
        ({"type": "string", "pattern": "(unclosed"}, "/pattern: '(unclosed' is not a regular expression RE2 runs"),
        ({"type": "string", "pattern": "(a)\\1"}, "invalid escape sequence"),
        ({"type": "string", "pattern": "^(?=a)"}, "invalid perl operator"),
        ({"patternProperties": {"(?<!x)y": {}}}, "/patternProperties: '(?<!x)y'"),
        ({"type": "string", "pattern": "a{1001}"}, "invalid repetition size"),
        ({"properties": {"n": {"type": 5}}}, "/properties/n/type: 5 is not valid"),
        ({"type": "strng"}, "/type: 'strng' is not valid"),
    ],
)
def test_a_schema_the_bot_cannot_check_is_invalid_with_the_problem_in_one_line(schema, said):
    with pytest.raises(InvalidSchemaError) as caught:
        check_schema(schema)
    assert said in caught.value.problem and "\n" not in caught.value.problem
    with pytest.raises(InvalidSchemaError):
        create_tool(id="t", description="d", execute=_nothing, input_schema=schema)


async def _nothing(args, ctx):
    return None
