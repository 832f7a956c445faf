"""The offline DEMO model: a small, rule-based, OpenAI-compatible `/v1/chat/completions`, so the
playground needs no model key. It only knows the demo agent's tools, and only offers a tool the
request lists:

- "delete record 3" -> `delete-record` {"id": 3}
- "refund $25 for order A-1001", "refund order A-1 $30", "订单 A-7 退款 30美元" -> `issue-refund` (an amount
  and order made up when not given)
- "weather" -> `get-weather` (with the city when one is named after "in", else the tool asks)
- "list records" -> `list-records`
- an MCP server's tool (`SERVER__VERB_NOUN`, e.g. `tickets__close_ticket`) when the message names its
  words in order ("close ticket 2", "open a ticket: the printer is on fire", "list the tickets"): numbers
  fill its integer arguments, the text after a colon (or in quotes) its required text argument
- a structured-output request (`response_format`, the auto-resume extraction) -> the city-looking word
  of the reply as the first text field asked for, an enum value the reply names, yes/no for a boolean,
  every other field null
- after a tool result -> one sentence saying what the tool did
- anything else -> a friendly reply listing what it can do

It streams (SSE, text and tool calls) or answers in one piece, as the client asks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import unicodedata
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MODEL_NAME = "playground-demo"

_COMMON_WORDS = """a an the in at for of on to from and or but i i'm im me my we you your it it's its is are was be
this that there here what what's whats how about please thanks thank ok okay yes no yeah sure hi hello hey today
now tomorrow weather city town like tell show give say know think want delete remove record records refund order
list approve decline help can could would will do does did just also maybe"""
_NOT_A_CITY = frozenset(_COMMON_WORDS.split())


@dataclass
class DemoReply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def finish_reason(self) -> str:
        return "tool_calls" if self.tool_calls else "stop"


def add_demo_model_routes(web_app: web.Application, *, word_delay: float = 0.02) -> None:
    """`POST /v1/chat/completions` (and `GET /v1/models`); `word_delay` paces streamed words so the page
    shows an answer arriving."""
    web_app.router.add_post("/v1/chat/completions", _ChatCompletions(word_delay).handle)
    web_app.router.add_get("/v1/models", _models)


async def _models(_request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "demo"}]})


class _ChatCompletions:
    def __init__(self, word_delay: float):
        self.word_delay = word_delay

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return _error(400, "messages is required")
        reply = answer(body)
        usage = {"prompt_tokens": _count(body["messages"]), "completion_tokens": len(reply.text.split()) + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        completion_id = "chatcmpl-" + uuid.uuid4().hex[:24]
        model = str(body.get("model") or MODEL_NAME)
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if reply.tool_calls:
                message["tool_calls"] = reply.tool_calls
            return web.json_response(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
                    "usage": usage,
                }
            )
        return await self._stream(request, body, reply, usage, completion_id, model)

    async def _stream(self, request, body, reply: DemoReply, usage, completion_id: str, model: str):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        async def send(choices: list[dict[str, Any]], **extra: Any) -> None:
            chunk = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": choices,
                **extra,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        for word in re.findall(r"\S+\s*|\s+", reply.text):
            await send([{"index": 0, "delta": {"content": word}, "finish_reason": None}])
            if self.word_delay:
                await asyncio.sleep(self.word_delay)
        for index, call in enumerate(reply.tool_calls):
            first = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"]},
            }
            await send([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])
            rest = {"index": index, "function": {"arguments": call["function"]["arguments"]}}
            await send([{"index": 0, "delta": {"tool_calls": [rest]}, "finish_reason": None}])
        await send([{"index": 0, "delta": {}, "finish_reason": reply.finish_reason}])
        if (body.get("stream_options") or {}).get("include_usage"):
            await send([], usage=usage)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": {"message": message, "type": "invalid_request_error"}}, status=status)


def _count(messages: list[Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages if isinstance(m, dict)) // 4 + 1


# --- the rules ---------------------------------------------------------------------------------
def answer(body: dict[str, Any]) -> DemoReply:
    """What the demo model says to a chat completion request."""
    if isinstance(body.get("response_format"), dict) and body["response_format"].get("type") == "json_schema":
        spec = body["response_format"].get("json_schema") or {}
        return DemoReply(text=json.dumps(structured_answer(body["messages"], spec.get("schema")), ensure_ascii=False))
    offered = {
        (tool.get("function") or {}).get("name"): (tool.get("function") or {}).get("parameters") or {}
        for tool in body.get("tools") or []
        if isinstance(tool, dict) and tool.get("type", "function") == "function"
    }
    tools = set(offered)
    messages = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") != "system"]
    unsaid = unsummarised_results(messages)
    if messages and messages[-1].get("role") == "tool":
        return DemoReply(text=summarise_results(messages, unsaid))
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    reply = reply_to(_text_of(last_user), tools, offered)
    if unsaid and not reply.tool_calls:
        # a resumed call finished after the user's answer was added to the run: say what it did
        return DemoReply(text=summarise_results(messages, unsaid))
    return reply


def reply_to(text: str, tools: set[str | None], schemas: dict[Any, Any] | None = None) -> DemoReply:
    """The answer to a user's message: a tool call when a rule matches and the tool is offered, else help."""
    wanted = wanted_tool(text) or wanted_mcp_tool(text, schemas or {})
    if wanted is not None and wanted[0] in tools:
        name, args = wanted
        call_id = "call_" + uuid.uuid4().hex[:20]
        return DemoReply(
            tool_calls=[{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}]
        )
    return DemoReply(text=help_text(tools, schemas))


def wanted_tool(text: str) -> tuple[str, dict[str, Any]] | None:
    """The demo tool a message asks for, with its arguments; None when no rule matches."""
    words = _plain(text).lower()
    delete = re.search(r"\b(?:delete|remove)\b\D*?(\d+)", words)
    if delete:
        return "delete-record", {"id": int(delete.group(1))}
    if _REFUND_WORDS.search(words):
        return "issue-refund", refund_args(_plain(text))
    if re.search(r"\bweather\b", words):
        city = city_after_preposition(_plain(text))
        return "get-weather", {"city": city} if city else {}
    if re.search(r"\b(?:list|show)\b.*\brecords?\b|^records?\b", words):
        return "list-records", {}
    return None


def wanted_mcp_tool(text: str, schemas: dict[Any, Any]) -> tuple[str, dict[str, Any]] | None:
    """The offered MCP tool (`SERVER__VERB_NOUN`) whose words the message names in order, the earliest
    verb first ("list open tickets" is `list_tickets`, not `open_ticket`); None when none fits."""
    words = re.findall(r"\w+", _plain(text).lower())
    best: tuple[int, str] | None = None
    for name in schemas:
        if not isinstance(name, str) or "__" not in name:
            continue
        at = _in_order(words, name.partition("__")[2].lower().split("_"))
        if at is not None and (best is None or at < best[0]):
            best = (at, name)
    if best is None:
        return None
    return best[1], mcp_args(_plain(text), schemas[best[1]])


def _in_order(words: list[str], wanted: list[str]) -> int | None:
    """Where the first of `wanted` is when all of them occur in `words` in order (a plural counts)."""
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


def mcp_args(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for an MCP tool from its input schema: numbers in the message for its integer and number
    fields, in order; the text after a colon (or in quotes) for its first required text field."""
    numbers = iter(re.findall(r"\d+(?:\.\d+)?", text))
    quoted = re.search(r"[\"“«「](.+?)[\"”»」]", text)
    after_colon = text.partition(":")[2].strip() if ":" in text else ""
    free_text = (quoted.group(1) if quoted else after_colon) or None
    required = set(schema.get("required") or [])
    args: dict[str, Any] = {}
    for field_name, prop in (schema.get("properties") or {}).items():
        kind = (prop or {}).get("type")
        if kind in ("integer", "number"):
            number = next(numbers, None)
            if number is not None:
                args[field_name] = int(float(number)) if kind == "integer" else float(number)
        elif kind == "string" and field_name in required and free_text:
            args[field_name], free_text = free_text, None
    return args


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


def refund_args(text: str) -> dict[str, Any]:
    """`issue-refund` arguments: the amount and the order; made up when not given, so the approval shows
    something to edit.

    The order is found first (after "order" or its word in another language, or a code like A-1001) and
    its span is set aside, so its digits are never read as the amount ("refund order A-1 $30" is $30).
    An amount is a number with a currency sign before it ($30, €12,50), else one with a currency after it
    (30$, 25 dollars, 30美元, 500円, 5000원); a sign before a number wins, so in "1 $30" the amount is 30."""
    text = unicodedata.normalize("NFKC", text)  # full-width digits and signs: ３０ドル, ＄30
    order_match = _ORDER_AFTER_WORD.search(text) or _ORDER_CODE.search(text)
    rest = text
    if order_match is not None:
        start, end = order_match.span(1)
        rest = text[:start] + " " * (end - start) + text[end:]
    amount = _amount_in(rest)
    args: dict[str, Any] = {
        "order_id": order_match.group(1).lstrip("#") if order_match else "A-1001",
        "amount": 10 if amount is None else (int(amount) if amount.is_integer() else amount),
    }
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


def city_after_preposition(text: str) -> str | None:
    """ "weather in Paris" -> "Paris"; "weather in new york?" -> "New York"."""
    match = re.search(r"\b(?:in|at|for)\s+([A-Za-zÀ-ÿ][\w'’-]*(?:\s+[A-Za-zÀ-ÿ][\w'’-]*){0,2})", text, re.IGNORECASE)
    if not match:
        return None
    words = []
    for word in match.group(1).split():
        if word.lower() in _NOT_A_CITY:
            break
        words.append(word)
    return " ".join(w[:1].upper() + w[1:] for w in words) or None


def city_in(text: str) -> str | None:
    """A city-looking word in a message that answers "Which city?": after "in"/"at"/"for", else a
    capitalised word, else the whole message when it is one to three plain words. A message that asks
    for something else (a tool rule matches) names no city."""
    text = _plain(text)
    if wanted_tool(text) is not None and not re.search(r"\bweather\b", text, re.IGNORECASE):
        return None
    after = city_after_preposition(text)
    if after:
        return after
    words = re.findall(r"[A-Za-zÀ-ÿ][\w'’-]*", text)
    capitalised = [w for w in words if w[0].isupper() and w.lower() not in _NOT_A_CITY]
    if capitalised:
        return " ".join(capitalised[:3])
    plain = [w for w in words if w.lower() not in _NOT_A_CITY]
    if plain and len(words) <= 3 and not re.search(r"\d", text):
        return " ".join(w.capitalize() for w in plain)
    return None


def structured_answer(messages: list[Any], schema: Any) -> Any:
    """The answer to a `response_format` request. For the auto-resume extraction (a user message with a
    `Reply: ...` line, and a schema of nullable fields, or of one object of fields per waiting call):
    the city of the reply in the first text field, every other field null."""
    last_user = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    found = re.search(r"^Reply: (.*)$", _text_of(last_user) if last_user else "", re.MULTILINE)
    if not found or not isinstance(schema, dict):
        return {}
    city = city_in(found.group(1))
    properties = schema.get("properties") or {}
    nested = bool(properties) and all((p or {}).get("type") == "object" for p in properties.values())
    forms = properties if nested else {None: schema}
    answer: dict[str, Any] = {}
    reply = found.group(1)
    for label, form in forms.items():
        fields = {name: None for name in (form or {}).get("properties") or {}}
        name = _first_string_field(form or {})
        if city and name:
            fields[name], city = city, None
        for field_name, prop in ((form or {}).get("properties") or {}).items():
            prop = prop or {}
            if isinstance(prop.get("enum"), list):  # an enum value the reply names
                named = [
                    v for v in prop["enum"] if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", reply, re.I)
                ]
                fields[field_name] = named[0] if len(named) == 1 else None
            elif prop.get("type") == "boolean" or "boolean" in (prop.get("type") or []):
                fields[field_name] = _yes_or_no(reply)
        if label is None:
            return fields
        answer[label] = fields
    return answer


def _yes_or_no(reply: str) -> bool | None:
    words = set(re.findall(r"\w+", reply.lower()))
    no, yes = (
        bool(words & {"no", "not", "don't", "nope", "cancel"}),
        bool(words & {"yes", "yeah", "sure", "ok", "okay"}),
    )
    return None if no == yes else yes


def _first_string_field(schema: dict[str, Any]) -> str | None:
    for name, prop in (schema.get("properties") or {}).items():
        kinds = (prop or {}).get("type")
        if "enum" not in (prop or {}) and (kinds == "string" or (isinstance(kinds, list) and "string" in kinds)):
            return name
    return None


def unsummarised_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results since the model last answered in text (calls still waiting left out)."""
    since: list[dict[str, Any]] = []
    for message in reversed(messages):
        if message.get("role") == "assistant" and _text_of(message).strip() and not message.get("tool_calls"):
            break
        if message.get("role") == "tool" and not _is_waiting(_text_of(message)):
            since.insert(0, message)
    return since


def _is_waiting(content: str) -> bool:
    try:
        result = json.loads(content)
    except ValueError:
        return False
    return isinstance(result, dict) and result.get("status") == "waiting"


def summarise_results(messages: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """One sentence per tool result."""
    names: dict[str, str] = {}
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call.get("id")] = (call.get("function") or {}).get("name", "the tool")
    if not results:
        return "The request is still waiting for a decision or an answer in the thread."
    return " ".join(summarise(names.get(m.get("tool_call_id"), "the tool"), _text_of(m)) for m in results)


def summarise(tool_name: str, content: str) -> str:
    if content.startswith("The user did not approve"):
        reason = content.partition("Reason: ")[2].strip()
        return f"OK, I did not run `{tool_name}`" + (f": {reason}" if reason else ".")
    if content.startswith("Nobody approved this tool call in time"):  # the runtime's, not the tool's
        why = content.partition("(")[2].rstrip(")").strip() or "nobody approved it in time"
        return f"I did not run `{tool_name}`: {why}."
    try:
        result = json.loads(content)
    except ValueError:
        return f"`{tool_name}` said: {content}"
    if not isinstance(result, dict):
        return f"`{tool_name}` returned {json.dumps(result)}."
    if "error" in result:
        if "disabled by an admin" in str(result["error"]):
            return f"I did not run `{tool_name}`: an admin's policy disabled it."
        return f"`{tool_name}` failed: {result['error']}"
    if "deleted" in result:
        if result["deleted"]:
            return f"Done: record {result.get('id')} is deleted."
        return f"There is no record {result.get('id')}, so nothing was deleted."
    if "refund_id" in result:
        amount = result.get("amount")
        shown = f"{amount:.2f}" if isinstance(amount, (int, float)) else str(amount)
        return f"Refund #{result['refund_id']} of ${shown} issued for order {result.get('order_id')}."
    if "temperature_c" in result:
        return f"It is {result['temperature_c']} °C and {result.get('conditions', 'fine')} in {result.get('city')}."
    if isinstance(result.get("records"), list):
        records = result["records"]
        if not records:
            return "There are no records left."
        listed = ", ".join(f"{r.get('id')}: {r.get('title')}" for r in records)
        return f"There are {len(records)} records: {listed}."
    return f"`{tool_name}` returned {json.dumps(result, ensure_ascii=False)}."


def help_text(tools: set[str | None], schemas: dict[Any, Any] | None = None) -> str:
    lines = ["Hi! I'm the playground's offline *demo model* (rule-based, no API key needed). Try:"]
    examples = {
        "list-records": "“list records”",
        "delete-record": "“delete record 3” (asks for approval first)",
        "issue-refund": "“refund $25 for order A-1001” (asks for approval first)",
        "get-weather": "“what's the weather?” (asks which city; answer in the thread)",
    }
    lines += [f"- {example}" for name, example in examples.items() if name in tools]
    for name in sorted(t for t in tools if isinstance(t, str) and "__" in t):  # an MCP server's tools
        server, _, tool = name.partition("__")
        schema = (schemas or {}).get(name) or {}
        properties = schema.get("properties") or {}
        needs_text = any((properties.get(f) or {}).get("type") == "string" for f in schema.get("required") or [])
        needs_number = any((p or {}).get("type") in ("integer", "number") for p in properties.values())
        example = tool.replace("_", " ") + (" 2" if needs_number else "") + (": …" if needs_text else "")
        lines.append(f"- “{example}” (`{name}`, from the MCP server `{server}`)")
    if len(lines) == 1:
        lines.append("- nothing: this agent has no tools I know. Set OPENAI_API_KEY to use a real model.")
    return "\n".join(lines)


def _text_of(message: dict[str, Any] | None) -> str:
    if not message:
        return ""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _plain(text: str) -> str:
    """The message without Slack markup: mentions, `<@U> says:` prefixes, entities."""
    text = re.sub(r"<@[A-Z0-9_]+>(?:\s+says:)?", " ", text)
    text = text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    return re.sub(r"\s+", " ", text).strip()
