"""The offline DEMO model: a small, rule-based, OpenAI-compatible `/v1/chat/completions`, so the
playground needs no model key. It only offers a tool the request lists:

- a tool named with its fields ("send-invoice customer=ACME amount=30"), the demo agent's tools in words,
  an MCP server's or the agent's tool by the words of its name (`demo_tools`); a required field the
  message does not give is asked for in a plain reply, never made up
- a structured-output request (`response_format`, the auto-resume extraction) -> the fields the reply
  gives as `field=value`, the city of the reply (in any script) as the first text field asked for, an
  enum value the reply names, the one number of the reply for the one numeric field, yes/no (in every
  language the bot knows) for a boolean, every other field null (`demo_reading`)
- after a tool result -> one sentence saying what the tool did
- anything else -> a friendly reply listing what it can do, with this agent's tools

It streams (SSE, text and tool calls) or answers in one piece, as the client asks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.agent import yes_or_no

from .demo_reading import NotTyped, city_in_any_script, kinds_of, latin_city, pairs_in, typed
from .demo_tools import ToolRequest, plain, requested_tool, wanted_tool

__all__ = ["add_demo_model_routes", "answer", "city_in", "help_text", "structured_answer", "summarise", "wanted_tool"]

MODEL_NAME = "playground-demo"


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
    """The answer to a user's message: a tool call when the message asks for an offered tool and gives its
    required fields; a question for those it does not give; else help."""
    offered = {name: (schemas or {}).get(name) or {} for name in tools if isinstance(name, str)}
    request = requested_tool(text, offered)
    if request is None:
        return DemoReply(text=help_text(tools, schemas))
    if not request.complete:
        return DemoReply(text=ask_for(request, offered[request.tool]))
    call_id = "call_" + uuid.uuid4().hex[:20]
    call = {"name": request.tool, "arguments": json.dumps(request.args, ensure_ascii=False)}
    return DemoReply(tool_calls=[{"id": call_id, "type": "function", "function": call}])


def ask_for(request: ToolRequest, schema: dict[str, Any]) -> str:
    """What the demo model says instead of making up what the message did not give."""
    properties = schema.get("properties") or {}
    lines = []
    if request.missing:
        named = [_described(f, properties.get(f) or {}) for f in request.missing]
        listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        lines.append(f"To run `{request.tool}` I still need {listed}; I do not make values up.")
    for name, expected in request.unfit.items():
        lines.append(f"`{name}` must be {expected}.")
    given = [f"{k}={_shown(v)}" for k, v in request.args.items()]
    example = " ".join([request.tool, *given, *(f"{f}=…" for f in [*request.missing, *request.unfit])])
    lines.append(f"Say it in a message, e.g. “{example}”.")
    return " ".join(lines)


def _described(name: str, prop: dict[str, Any]) -> str:
    about = str(prop.get("description") or "").strip().rstrip(".")
    return f"`{name}` ({about[:1].lower() + about[1:]})" if about else f"`{name}`"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return f'"{text}"' if re.search(r"\s", text) else text


def city_in(text: str) -> str | None:
    """A city in a message that answers "Which city?", in any script: after "in"/"at"/"for", a capitalised
    word, or a short message of plain words in Latin letters; else what a message in another script says
    besides the words every language of the bot knows (我在台北, 서울이요, 東京にいます). A message that
    asks for something else (a tool rule matches) names no city."""
    text = plain(text)
    if wanted_tool(text) is not None and not re.search(r"\bweather\b", text, re.IGNORECASE):
        return None
    return latin_city(text) or city_in_any_script(text)


def structured_answer(messages: list[Any], schema: Any) -> Any:
    """The answer to a `response_format` request. For the auto-resume extraction (a user message with a
    `Reply: ...` line, and a schema of nullable fields, or of one object of fields per waiting call):
    what the reply gives, every other field null (see the module's docstring)."""
    last_user = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
    found = re.search(r"^Reply: (.*)$", _text_of(last_user) if last_user else "", re.MULTILINE)
    if not found or not isinstance(schema, dict):
        return {}
    reply = found.group(1)
    pairs = pairs_in(reply)
    city = None if pairs else city_in(reply)
    properties = schema.get("properties") or {}
    nested = bool(properties) and all((p or {}).get("type") == "object" for p in properties.values())
    forms = properties if nested else {None: schema}
    answer: dict[str, Any] = {}
    for label, form in forms.items():
        fields = _fields_of_reply(reply, pairs, city, (form or {}).get("properties") or {})
        if city and city in fields.values():
            city = None  # one word of the reply answers one field
        if label is None:
            return fields
        answer[label] = fields
    return answer


def _fields_of_reply(reply: str, pairs: dict[str, str], city: str | None, properties: dict[str, Any]) -> dict:
    fields: dict[str, Any] = {name: None for name in properties}
    numeric = [n for n, p in properties.items() if kinds_of(p or {}) & {"integer", "number"}]
    numbers = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", reply)
    text_field = next(
        (n for n, p in properties.items() if "enum" not in (p or {}) and "string" in kinds_of(p or {})), None
    )
    for name, prop in properties.items():
        prop = prop or {}
        if name in pairs:
            try:
                fields[name] = typed(pairs[name], prop)
            except NotTyped:
                pass
        elif pairs:
            continue  # a reply of `field=value` pairs gives those fields only
        elif isinstance(prop.get("enum"), list) and {"yes", "no"} <= set(prop["enum"]):
            # a boolean, as the auto-resume reading asks for one: the reply's yes or no, in its language
            said = yes_or_no(reply)
            unclear = "unclear" if "unclear" in prop["enum"] else None
            fields[name] = unclear if said is None else "yes" if said else "no"
        elif isinstance(prop.get("enum"), list):  # an enum value the reply names
            named = [v for v in prop["enum"] if isinstance(v, str) and re.search(rf"\b{re.escape(v)}\b", reply, re.I)]
            fields[name] = named[0] if len(named) == 1 else None
        elif "boolean" in kinds_of(prop):
            fields[name] = yes_or_no(reply)
        elif name in numeric and len(numeric) == 1 and len(numbers) == 1:
            fields[name] = typed(numbers[0], prop)
        elif name == text_field and city:
            fields[name] = city
    return fields


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
            names[str(call.get("id"))] = (call.get("function") or {}).get("name", "the tool")
    if not results:
        return "The request is still waiting for a decision or an answer in the thread."
    return " ".join(summarise(names.get(str(m.get("tool_call_id")), "the tool"), _text_of(m)) for m in results)


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


_DEMO_EXAMPLES = {
    "list-records": "“list records”",
    "delete-record": "“delete record 3” (asks for approval first)",
    "issue-refund": "“refund $25 for order A-1001” (asks for approval first)",
    "get-weather": "“what's the weather?” (asks which city; answer in the thread)",
}


def help_text(tools: set[str | None], schemas: dict[Any, Any] | None = None) -> str:
    lines = ["Hi! I'm the playground's offline *demo model* (rule-based, no API key needed). Try:"]
    lines += [f"- {example}" for name, example in _DEMO_EXAMPLES.items() if name in tools]
    for name in sorted(t for t in tools if isinstance(t, str) and t not in _DEMO_EXAMPLES):
        schema = (schemas or {}).get(name) or {}
        if "__" in name:  # an MCP server's tool, in words
            server, _, tool = name.partition("__")
            properties = schema.get("properties") or {}
            needs_text = any("string" in kinds_of(properties.get(f) or {}) for f in schema.get("required") or [])
            needs_number = any(kinds_of(p or {}) & {"integer", "number"} for p in properties.values())
            example = tool.replace("_", " ") + (" 2" if needs_number else "") + (": …" if needs_text else "")
            lines.append(f"- “{example}” (`{name}`, from the MCP server `{server}`)")
        else:
            lines.append(f"- “{tool_example(name, schema)}”")
    if len(lines) == 1:
        lines.append("- nothing: this agent has no tools. Set OPENAI_API_KEY to use a real model.")
    return "\n".join(lines)


def tool_example(name: str, schema: dict[str, Any]) -> str:
    """A message that calls the tool by name with its required fields to fill: `send-invoice customer=…
    amount=…`."""
    return " ".join([name, *(f"{f}=…" for f in schema.get("required") or [])])


def suggestions(tools: dict[str, dict[str, Any]]) -> list[str]:
    """What the page's chips offer to type for these tools (name -> JSON Schema of its arguments): the
    demo agent's phrases for its tools, `tool-id field=…` for any other, four at most."""
    offered = [_DEMO_EXAMPLES[n].split("”")[0].lstrip("“") for n in _DEMO_EXAMPLES if n in tools]
    offered += [tool_example(n, s) for n, s in tools.items() if n not in _DEMO_EXAMPLES]
    return offered[:4]


def _text_of(message: dict[str, Any] | None) -> str:
    if not message:
        return ""
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")
