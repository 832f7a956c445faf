"""Which tool a message asks the offline demo model for, and its arguments: only what the message says.

- any tool the request offers, named with its fields: "send-invoice customer=ACME amount=30" (the values
  typed by the tool's JSON Schema: numbers, booleans, text, JSON for lists and objects)
- the demo agent's tools in words: "delete record 3", "refund $25 for order A-1001", "refund order A-1
  $30", "订单 A-7 退款 30美元", "weather in Paris", "list records"
- any offered tool whose name's words the message names in order ("close ticket 2" is an MCP server's
  `tickets__close_ticket`, "send an invoice" the agent's `send-invoice`): numbers fill its numeric fields,
  the text after a colon (or in quotes) its first required text field, `field=value` pairs their fields

A required field the message does not give is never made up: the request names it as missing, and the
demo model asks for it instead of calling the tool.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from .demo_reading import NotTyped, city_after_preposition, kinds_of, pairs_in, typed


@dataclass
class ToolRequest:
    """A call the message asks for: the arguments it gives, the required fields it does not give, and
    the values that do not fit their field (`field` -> what was expected)."""

    tool: str
    args: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    unfit: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.missing and not self.unfit


def requested_tool(text: str, schemas: dict[str, dict[str, Any]]) -> ToolRequest | None:
    """The call a message asks for among the offered tools (`schemas`: name -> JSON Schema of its
    arguments); None when it asks for none."""
    text = plain(text)
    found: tuple[str, dict[str, Any]] | None = None
    named = _named_tool(text, schemas)
    if named is not None:
        found = named, {}
    else:
        wanted = wanted_tool(text)
        if wanted is not None and wanted[0] in schemas:
            found = wanted
        else:
            found = _tool_by_its_words(text, schemas)
    if found is None:
        return None
    name, args = found
    schema = schemas.get(name) or {}
    request = ToolRequest(tool=name, args=dict(args))
    properties = schema.get("properties") or {}
    for key, value in pairs_in(text).items():
        if key == name or (properties and key not in properties):
            continue
        try:
            request.args[key] = typed(value, properties.get(key) or {})
        except NotTyped as exc:
            request.args.pop(key, None)
            request.unfit[key] = str(exc)
    request.missing = [f for f in schema.get("required") or [] if f not in request.args and f not in request.unfit]
    return request


def _named_tool(text: str, schemas: dict[str, dict[str, Any]]) -> str | None:
    """The offered tool whose exact name (`send-invoice`, `tickets__close_ticket`) is a word of the message."""
    words = {w.casefold() for w in re.findall(r"[\w.-]+", text)}
    return next((name for name in schemas if isinstance(name, str) and name.casefold() in words), None)


def _tool_by_its_words(text: str, schemas: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
    """The offered tool whose name's words the message names in order, the earliest verb first ("list
    open tickets" is `list_tickets`, not `open_ticket`); None when none fits."""
    words = re.findall(r"\w+", text.lower())
    best: tuple[int, str] | None = None
    for name in schemas:
        if not isinstance(name, str):
            continue
        own = name.rpartition("__")[2]  # an MCP server's tool: its name after the server's
        at = _in_order(words, [w for w in re.split(r"[-_.\s]+", own.lower()) if w])
        if at is not None and (best is None or at < best[0]):
            best = (at, name)
    if best is None:
        return None
    return best[1], words_args(text, schemas[best[1]] or {})


def _in_order(words: list[str], wanted: list[str]) -> int | None:
    """Where the first of `wanted` is when all of them occur in `words` in order (a plural counts)."""
    if not wanted:
        return None
    first, position = None, 0
    for word in wanted:
        forms = {word, word + "s", word + "es", *_SAME_VERB.get(word, ())}
        while position < len(words) and words[position] not in forms:
            position += 1
        if position == len(words):
            return None
        first = position if first is None else first
        position += 1
    return first


_SAME_VERB = {"list": ("show", "which", "what"), "get": ("show", "what"), "search": ("find",)}


def words_args(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments from a message in words: the numbers in it (not those of `field=value` pairs) for the
    numeric fields, in order; the text after a colon (or in quotes) for the first required text field."""
    outside_pairs = re.sub(r"[\w-]+\s*[=＝]\s*\S+", " ", text)
    numbers = iter(re.findall(r"\d+(?:\.\d+)?", outside_pairs))
    quoted = re.search(r"[\"“«「](.+?)[\"”»」]", outside_pairs)
    after_colon = outside_pairs.partition(":")[2].strip() if ":" in outside_pairs else ""
    free_text = (quoted.group(1) if quoted else after_colon) or None
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for field_name, prop in (schema.get("properties") or {}).items():
        kinds = kinds_of(prop or {})
        if kinds & {"integer", "number"}:
            number = next(numbers, None)
            if number is not None:
                args[field_name] = int(float(number)) if "integer" in kinds else float(number)
        elif "string" in kinds and field_name in required and free_text:
            args[field_name], free_text = free_text, None
    return args


# -- the demo agent's tools, in words --------------------------------------------------------------


def wanted_tool(text: str) -> tuple[str, dict[str, Any]] | None:
    """The demo tool a message asks for, with the arguments it gives; None when no rule matches."""
    words = plain(text).lower()
    delete = re.search(r"\b(?:delete|remove)\b\D*?(\d+)", words)
    if delete:
        return "delete-record", {"id": int(delete.group(1))}
    if _REFUND_WORDS.search(words):
        return "issue-refund", refund_args(plain(text))
    if re.search(r"\bweather\b", words):
        city = city_after_preposition(plain(text))
        return "get-weather", {"city": city} if city else {}
    if re.search(r"\b(?:list|show)\b.*\brecords?\b|^records?\b", words):
        return "list-records", {}
    return None


_CURRENCY_BEFORE = r"(?:US\$|\$|€|£|¥|￥|₩|₹)"
_CURRENCY_AFTER = (
    r"(?:\$|€|£|¥|₩|usd|eur|gbp|dollars?|euros?|pounds?|bucks|dólares|dolares|dollari|"
    r"美元|美金|元|块|ドル|円|달러|원|دولار|دولارات|יורו|דולר)"
)
_NUMBER = r"(\d+(?:[.,]\d{1,2})?)"
_AMOUNT_BEFORE = re.compile(_CURRENCY_BEFORE + r"\s*" + _NUMBER, re.IGNORECASE)
_AMOUNT_AFTER = re.compile(r"(?<![\w.,-])" + _NUMBER + r"\s*" + _CURRENCY_AFTER + r"(?![A-Za-z])", re.IGNORECASE)
_ORDER_AFTER_WORD = re.compile(
    r"(?:\border|订单|訂單|注文|주문|pedido|commande|bestellung|ordine|طلب|הזמנה)\s*(?:#|no\.?|number|番号|번호)?\s*"
    r"([A-Za-z0-9][A-Za-z0-9_-]*)",
    re.IGNORECASE,
)
_ORDER_CODE = re.compile(r"(?<![\w$€£¥])([A-Za-z]+-\d+|#\d+)\b")
_REFUND_WORDS = re.compile(
    r"\brefund|\breimburse|退款|退钱|退錢|返金|払い戻|환불|reembols|rembours|rückerstatt|erstatt|rimbors|"
    r"استرداد|استرجاع|החזר",
    re.IGNORECASE,
)
_NOT_AN_ORDER = frozenset({"for", "of", "to", "and", "with", "from", "by", "the", "a", "an", "that", "is"})


def refund_args(text: str) -> dict[str, Any]:
    """`issue-refund` arguments: the amount and the order the message names; one it does not name is
    left out (the demo model then asks for it), never made up.

    The order is found first (after "order" or its word in another language, or a code like A-1001) and
    its span is set aside, so its digits are never read as the amount ("refund order A-1 $30" is $30).
    An amount is a number with a currency sign before it ($30, €12,50), else one with a currency after it
    (30$, 25 dollars, 30美元, 500円, 5000원); a sign before a number wins, so in "1 $30" the amount is 30."""
    text = unicodedata.normalize("NFKC", text)  # full-width digits and signs: ３０ドル, ＄30
    order_match = _ORDER_AFTER_WORD.search(text)
    if order_match is not None and order_match.group(1).lower() in _NOT_AN_ORDER:
        order_match = None  # "a refund for an order that broke": no order named
    order_match = order_match or _ORDER_CODE.search(text)
    rest = text
    if order_match is not None:
        start, end = order_match.span(1)
        rest = text[:start] + " " * (end - start) + text[end:]
    amount = _amount_in(rest)
    args: dict[str, Any] = {}
    if order_match is not None:
        args["order_id"] = order_match.group(1).lstrip("#")
    if amount is not None:
        args["amount"] = int(amount) if amount.is_integer() else amount
    reason = re.search(r"\b(?:because|reason:?)\s+(.+)$", text, re.IGNORECASE)
    if reason:
        args["reason"] = reason.group(1).strip().rstrip(".")
    return args


def _amount_in(text: str) -> float | None:
    """The first amount with its currency sign before it, else the first with a currency after it."""
    for pattern in (_AMOUNT_BEFORE, _AMOUNT_AFTER):
        found = pattern.search(text)
        if found:
            return float(found.group(1).replace(",", "."))
    return None


def plain(text: str) -> str:
    """The message without Slack markup: mentions, `<@U> says:` prefixes, entities."""
    text = re.sub(r"<@[A-Z0-9_]+>(?:\s+says:)?", " ", text)
    text = text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return re.sub(r"\s+", " ", text).strip()
