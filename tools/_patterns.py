"""JSON Schema's regular expressions (`pattern`, `patternProperties`, `format: regex`) on RE2.

A schema may come from a party the bot does not trust (an MCP server's tool or question), and Python's
`re` backtracks: `^(a+)+$` against 30 "a" and a "!" takes seconds, on the event loop. RE2 matches in
time linear in the text, so no pattern can stall the bot and no thread or time bound is needed. What RE2
cannot take (backreferences, lookaround, a repetition over 1000) makes the schema invalid.

jsonschema runs `re.search` in four keywords: `pattern`, `patternProperties`, and `additionalProperties`
and `unevaluatedProperties` (which ask which keys `patternProperties` covers). `KEYWORDS` replaces all
four; the rest of jsonschema stays as it is. Imports only the standard library, jsonschema and re2.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Iterator
from typing import Any

import re2  # type: ignore[import-untyped]
from jsonschema import ValidationError

_OPTIONS = re2.Options()
_OPTIONS.never_capture = True  # the keywords only ask whether a pattern matches
_OPTIONS.log_errors = False  # a bad pattern is reported as an invalid schema, not on stderr

PatternError = (re2.error, UnicodeError)
"""What compiling a pattern RE2 cannot take raises (a lone surrogate is not UTF-8)."""


@functools.lru_cache(maxsize=1024)
def compiled(pattern: str) -> Any:
    """The RE2 program of a JSON Schema pattern (ECMA-262 `\\uXXXX` read as RE2's `\\x{XXXX}`); raises
    one of `PatternError`."""
    try:
        return re2.compile(_re2_syntax(pattern), _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        raise re2.error(reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)) from None


def matches(pattern: str, text: str) -> bool:
    """Whether `pattern` matches somewhere in `text` (JSON Schema's patterns are not anchored)."""
    return compiled(pattern).search(text.encode("utf-8", "surrogatepass")) is not None


def is_regex(instance: Any) -> bool:
    """`format: regex` (the meta-schema asks it of every `pattern` and `patternProperties` key)."""
    if isinstance(instance, str):
        compiled(instance)
    return True


def _re2_syntax(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern[i] != "\\" or i + 1 == len(pattern):
            out.append(pattern[i])
            i += 1
            continue
        digits = pattern[i + 2 : i + 6]
        if pattern[i + 1] == "u" and len(digits) == 4 and all(c in string.hexdigits for c in digits):
            out.append("\\x{" + digits + "}")
            i += 6
        else:  # an escape, copied whole so that `\\u0041` stays a backslash and "u0041"
            out.append(pattern[i : i + 2])
            i += 2
    return "".join(out)


# --- the keywords (jsonschema's own, with `re.search` replaced by `matches`) --------------------------


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if matches(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    return [key for key in instance if key not in properties and not any(matches(pattern, key) for pattern in patterns)]


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    extras = _additional(instance, schema)
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(extra) for extra in sorted(extras, key=str))
        if "patternProperties" in schema:
            patterns = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(f"{listed} {verb} not match any of the regexes: {patterns}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({listed} {verb} unexpected)")


def _unevaluated_properties(
    validator: Any, unevaluated: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    evaluated = _evaluated_keys(validator, instance, schema)
    rejected = [
        key
        for key in instance
        if key not in evaluated
        and any(True for _ in validator.descend(instance[key], unevaluated, path=key, schema_path=key))
    ]
    if not rejected:
        return
    listed = ", ".join(repr(key) for key in (sorted(rejected, key=str) if unevaluated is False else rejected))
    verb = "was" if len(rejected) == 1 else "were"
    if unevaluated is False:
        yield ValidationError(f"Unevaluated properties are not allowed ({listed} {verb} unexpected)")
    else:
        yield ValidationError(
            f"Unevaluated properties are not valid under the given schema ({listed} {verb} unevaluated and invalid)"
        )


def _valid(errors: Iterator[ValidationError]) -> bool:
    return next(errors, None) is None


def _evaluated_keys(validator: Any, instance: dict[str, Any], schema: Any) -> set[str]:
    """The keys of `instance` some keyword of `schema` evaluates (jsonschema's
    `find_evaluated_property_keys_by_schema`, the one helper of `unevaluatedProperties` that runs `re`)."""
    if validator.is_type(schema, "boolean"):
        return set()
    keys: set[str] = set()
    for keyword in ("$ref", "$dynamicRef"):
        reference = schema.get(keyword)
        if reference is not None:
            resolved = validator._resolver.lookup(reference)
            there = validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            keys |= _evaluated_keys(there, instance, resolved.contents)
    properties = schema.get("properties")
    if validator.is_type(properties, "object"):
        keys |= properties.keys() & instance.keys()
    for keyword in ("additionalProperties", "unevaluatedProperties"):
        subschema = schema.get(keyword)
        if subschema is not None:
            keys |= {key for key, value in instance.items() if _valid(validator.descend(value, subschema))}
    for pattern in schema.get("patternProperties", {}):
        keys |= {key for key in instance if matches(pattern, key)}
    for key, subschema in schema.get("dependentSchemas", {}).items():
        if key in instance:
            keys |= _evaluated_keys(validator, instance, subschema)
    for keyword in ("allOf", "oneOf", "anyOf"):
        for subschema in schema.get(keyword, []):
            if _valid(validator.descend(instance, subschema)):
                keys |= _evaluated_keys(validator, instance, subschema)
    if "if" in schema:
        if validator.evolve(schema=schema["if"]).is_valid(instance):
            keys |= _evaluated_keys(validator, instance, schema["if"])
            if "then" in schema:
                keys |= _evaluated_keys(validator, instance, schema["then"])
        elif "else" in schema:
            keys |= _evaluated_keys(validator, instance, schema["else"])
    return keys


KEYWORDS = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
    "unevaluatedProperties": _unevaluated_properties,
}
"""Draft 2020-12's keywords that match regular expressions, on RE2 (for `jsonschema.validators.extend`)."""
