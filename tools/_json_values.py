"""JSON as the bot accepts it from outside (a model's arguments, an HTTP body, a Slack payload, a form).

Python's `json` reads more than JSON Schema and the databases take: `NaN`, `Infinity` and `1e400` (read
as infinity) are numbers no schema user expects (`NaN` passes `exclusiveMinimum: 0`), a NUL character is
refused by PostgreSQL in text, and a lone surrogate (`"\\ud800"`) cannot be encoded as UTF-8 by either
database. So at every boundary where such data comes in:

- a number that is not finite is refused (`JsonValueError`), as are nesting deeper than `MAX_DEPTH` and
  an integer of more digits than Python reads (4,300);
- text is cleaned, not refused: NUL characters are removed, lone surrogates become U+FFFD (the
  replacement character), in keys as in values, so a message with them is still answered.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

MAX_DEPTH = 64
"""How deeply arrays and objects may nest (Slack's deepest payloads nest about 10 levels)."""

NOT_FINITE = "must be a finite number, not NaN or infinity"
TOO_DEEP = f"nested more than {MAX_DEPTH} levels deep"
TOO_LONG_NUMBER = "a number has more digits than can be read (4,300 at most)"

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class JsonValueError(ValueError):
    """JSON text or a value the bot does not accept; the message says what and where."""

    def __init__(self, reason: str, path: str | None = None):
        self.reason = reason
        """What is wrong."""
        self.path = path or "/"
        """Where in the value (`/a/0`, `/` for the whole), as in `SchemaError`."""
        super().__init__(f"{path}: {reason}" if path else reason)


def clean_text(text: str) -> str:
    """`text` without NUL characters and with each lone surrogate replaced by U+FFFD."""
    if _UNSTORABLE.search(text) is None:
        return text
    text = text.replace("\x00", "")
    # UTF-16 pairs the surrogates that form a character and replaces the lone ones
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def plain_json(value: Any, *, max_depth: int = MAX_DEPTH) -> Any:
    """`value` with its text cleaned (`clean_text`); the same object when nothing needed cleaning.
    Raises JsonValueError for a number that is not finite or nesting deeper than `max_depth`."""
    return _plain(value, "", max_depth)


def read_json(text: str | bytes) -> Any:
    """Parse JSON text (bytes are UTF-8) into a plain value (`plain_json`); JsonValueError says why not."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        value = json.loads(text, parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise JsonValueError(f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise JsonValueError(f"{exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except JsonValueError:
        raise
    except ValueError:  # Python reads no integer of more than 4,300 digits
        raise JsonValueError(TOO_LONG_NUMBER) from None
    except RecursionError:
        raise JsonValueError(TOO_DEEP) from None
    return plain_json(value)


def non_finite_path(value: Any, path: str = "") -> str | None:
    """The path (`/a/0`, `/` for the root) of the first number in `value` that is not finite, or None."""
    if isinstance(value, float):
        return (path or "/") if not math.isfinite(value) else None
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite_path(item, f"{path}/{key}")
        if found is not None:
            return found
    return None


def _refuse_constant(name: str) -> Any:
    raise JsonValueError(f"{name} is not a JSON number ({NOT_FINITE})")


def _plain(value: Any, path: str, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise JsonValueError(NOT_FINITE, path or "/")
        return value
    if isinstance(value, dict):
        if depth <= 0:
            raise JsonValueError(TOO_DEEP, path or "/")
        changed = False
        result = {}
        for key, item in value.items():
            new_key = clean_text(key) if isinstance(key, str) else key
            new_item = _plain(item, f"{path}/{key}", depth - 1)
            changed = changed or new_key is not key or new_item is not item
            result[new_key] = new_item
        return result if changed else value
    if isinstance(value, list):
        if depth <= 0:
            raise JsonValueError(TOO_DEEP, path or "/")
        items = [_plain(item, f"{path}/{index}", depth - 1) for index, item in enumerate(value)]
        return items if any(new is not old for new, old in zip(items, value, strict=True)) else value
    return value
