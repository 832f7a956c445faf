"""Auto-resume: read the user's next message in a thread as the answer to a call parked by `suspend()`.

One deterministic structured-output request (temperature 0) per message. It is built so that even a
small local model reads it right: the question and the reply as a short plain dialogue, and the
answer asked for directly as the fields of the waiting call's `resume_schema`, each of which may be
null ("the reply does not say"). Nothing random is in it (no tool-call ids: the calls are named by
their tool), and nothing from the rest of the thread, so the same question and reply always give the
same request, and its size does not grow with the thread.

The model's reading is then checked against the message (`_grounding`), in any language: a value the
message does not support (a yes where it says no or gives no yes, a city it does not name, a number it
does not state) never resumes a call; the call keeps waiting and the model of the normal turn is told
what is still needed. A yes/no answer follows the words of the message (`languages/`): a clear refusal
resumes with the no whatever the model read; a yes needs the model and the words to agree. When no word
of the message is in any language the bot knows, a yes or a no resumes only if a second reading, the
question asked the other way round ("should it be called off?"), agrees: the one extra model call.
Approvals are never settled here: only calls that suspended themselves are offered.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memory import StoredToolCall
from tools import InvalidSchemaError, Schema, SchemaValidationError, check_schema

from . import _grounding as grounding
from ._model import StructuredOutputRefused, structured
from .exceptions import ModelError

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "You read a person's reply to a question and write down what the reply says, as JSON.\n"
    "- Take values only from the reply. A field the reply does not give is null.\n"
    "- A reply that says no, not yet, don't, cancel or stop is false. Only a clear yes is true.\n"
    "- The reply may be in any language. Copy a text value as the reply writes it, in its script.\n"
    "- A reply that asks something back, greets, hesitates or talks about something else gives nothing: "
    "every field is null.\n"
    "Answer with JSON only."
)
SCHEMA_IN_PROMPT = "Answer with a JSON object that fits this JSON schema:\n"
_BOOLEAN_WORDS = {"yes": True, "no": False, "unclear": None}
COPY_THE_WORD = "Copy the reply's answer word."
CALL_OFF_FIELD = "call_off"
"""The one field of the second reading: does the reply mean the question's action must not happen?"""
_ANSWER_FIELD = "answer"

RequestParts = tuple[list[dict[str, Any]], dict[str, Any]]
"""The messages and the JSON schema of one structured request to the model."""
"""The one field a call whose resume schema is not an object is asked for."""

_json_object_only: weakref.WeakSet[Any] = weakref.WeakSet()
"""Model clients (one per endpoint) whose server refused `json_schema`: from then on they get
`json_object`, with the schema in the prompt."""


@dataclass(frozen=True)
class Answer:
    """A parked call the message answers, with resume data it supports."""

    call: StoredToolCall
    resume_data: Any


@dataclass(frozen=True)
class Reading:
    """What the extraction made of a message."""

    answer: Answer | None = None
    """The call to resume; None when nothing resumes."""
    unclear: list[str] = field(default_factory=list)
    """What the message tried to answer but did not clearly give, for the thread to ask again."""


@dataclass(frozen=True)
class _Form:
    """The fields one parked call is asked for."""

    label: str
    """How the request names the call: its tool (numbered if the same tool waits twice)."""
    call: StoredToolCall
    fields: dict[str, dict[str, Any]]
    """Field name -> its schema (references resolved)."""
    required: list[str]
    wrapped: bool
    """False when the resume schema is not an object: the data is the one field's value."""


def _forms(parked: list[StoredToolCall]) -> list[_Form]:
    forms: list[_Form] = []
    seen: dict[str, int] = {}
    for call in parked:
        name = call.displayed_tool_name
        seen[name] = seen.get(name, 0) + 1
        label = name if seen[name] == 1 else f"{name} #{seen[name]}"
        schema = call.resume_schema or {}
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if schema.get("type") == "object" or properties:
            fields = {k: _resolve(v, schema) for k, v in (properties or {}).items()}
            required = [k for k in schema.get("required", []) if k in fields]
            forms.append(_Form(label, call, fields, required, wrapped=True))
        else:
            forms.append(_Form(label, call, {_ANSWER_FIELD: schema}, [_ANSWER_FIELD], wrapped=False))
    return forms


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """A property schema with a local `$ref` (as pydantic writes enums) and a single `allOf` resolved."""
    for _ in range(5):
        if not isinstance(schema, dict):
            return {}
        if "$ref" in schema and str(schema["$ref"]).startswith("#/"):
            target: Any = root
            for part in str(schema["$ref"])[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        elif isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
            schema = {**schema["allOf"][0], **{k: v for k, v in schema.items() if k != "allOf"}}
        else:
            return schema
    return schema if isinstance(schema, dict) else {}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The field's schema, also allowing null ("the reply does not say"). A yes/no field is asked as the
    reply's own word: a small model copies "no" from "no" reliably, and reads it as `true` often."""
    kinds = schema.get("type")
    if kinds == "boolean":
        return {"enum": list(_BOOLEAN_WORDS)}
    if "enum" in schema:
        nullable: dict[str, Any] = {"enum": [*schema["enum"], None]}
        if isinstance(kinds, str):
            nullable["type"] = [kinds, "null"]
        return nullable
    if isinstance(kinds, str) and kinds in ("string", "number", "integer", "boolean"):
        return {"type": [kinds, "null"]}
    return {"anyOf": [schema, {"type": "null"}]} if schema else {}


def _describe(name: str, schema: dict[str, Any]) -> str:
    """One field in words: `confirmed: true, false or null`."""
    if "enum" in schema:
        kind = "one of " + ", ".join(json.dumps(v) for v in schema["enum"]) + ", or null"
    else:
        kind = {
            "boolean": "yes, no or unclear",
            "integer": "a whole number or null",
            "number": "a number or null",
            "string": "",
        }.get(str(schema.get("type")), "a value or null")
    about = f" ({schema['description']})" if isinstance(schema.get("description"), str) else ""
    return f"{name}: {kind}{about}" if kind else f"{name}{about}"


def _question(call: StoredToolCall) -> str:
    asked = call.suspend_payload
    if isinstance(asked, str):
        return asked
    if isinstance(asked, dict):
        for key in ("question", "message", "prompt", "text"):
            if isinstance(question := asked.get(key), str):
                return question
    return json.dumps(asked, ensure_ascii=False, sort_keys=True)


def extraction_request(parked: list[StoredToolCall], message: str, *, schema_in_prompt: bool = False) -> RequestParts:
    """The messages and the JSON schema of the one extraction request. Deterministic: the same calls
    (tool, question, schema) and the same message give the same request, whatever their ids."""
    forms = _forms(parked)
    objects = {
        form.label: {
            "type": "object",
            "properties": {name: _nullable(schema) for name, schema in form.fields.items()},
            "required": list(form.fields),
            "additionalProperties": False,
        }
        for form in forms
    }
    if len(forms) == 1:
        form = forms[0]
        schema = objects[form.label]
        if all(s.get("type") == "boolean" for s in form.fields.values()):
            ask = COPY_THE_WORD
        else:
            ask = "Fields:\n" + "\n".join(f"- {_describe(n, s)}" for n, s in form.fields.items())
        prompt = f"Question: {_question(form.call)}\nReply: {message}\n\n{ask}"
    else:
        schema = {
            "type": "object",
            "properties": objects,
            "required": list(objects),
            "additionalProperties": False,
        }
        questions = []
        for form in forms:
            lines = "\n".join(f"  - {_describe(n, s)}" for n, s in form.fields.items())
            questions.append(f'"{form.label}" asked: {_question(form.call)}\n{lines}')
        prompt = (
            "Questions waiting for the reply:\n"
            + "\n".join(questions)
            + f"\n\nReply: {message}\n\n"
            + "Fill in the fields of the question the reply answers; the fields of the others are null."
        )
    if schema_in_prompt:
        prompt += "\n\n" + SCHEMA_IN_PROMPT + json.dumps(schema, ensure_ascii=False)
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}], schema


@dataclass(frozen=True)
class _Unchecked:
    """A yes/no reading the words of the message cannot check (no word of a known language in it)."""

    label: str
    call: StoredToolCall
    field: str
    value: bool


def read_reply(
    parked: list[StoredToolCall], reply: Any, message: str, *, second: dict[str, bool | None] | None = None
) -> Reading:
    """Which call the model's reply answers, keeping only what the message supports. `second` is the
    second reading of an unchecked yes/no (call label -> True for "call it off", False for "go on")."""
    return _read(parked, reply, message, second or {})[0]


def _read(
    parked: list[StoredToolCall], reply: Any, message: str, second: dict[str, bool | None]
) -> tuple[Reading, list[_Unchecked]]:
    forms = _forms(parked)
    if len(forms) == 1:
        filled = {forms[0].label: reply}
    else:
        filled = reply if isinstance(reply, dict) else {}
    complete: list[Answer] = []
    unclear: list[str] = []
    unchecked: list[_Unchecked] = []
    asks_back = grounding.is_question_back(message)
    words = grounding.yes_or_no(message)
    known = grounding.knows_words_of(message)
    for form in forms:
        values = filled.get(form.label)
        values = values if isinstance(values, dict) else {}
        given = {k: _from_word(v, form.fields[k]) for k, v in values.items() if k in form.fields}
        if words is False and not asks_back:
            # a clear refusal resumes with the no, whatever the model read ("no, cancel that" read as yes)
            booleans = [k for k in form.fields if form.fields[k].get("type") == "boolean"]
            if len(forms) == 1 and len(booleans) == len(form.fields):
                given.update(dict.fromkeys(booleans, False))  # the only question, and a yes/no one
            else:
                given.update({k: False for k in booleans if isinstance(given.get(k), bool)})
        given = {k: v for k, v in given.items() if v is not None}
        if not given:
            continue
        kept = {k: v for k, v in given.items() if grounding.value_supported(v, form.fields[k], message)}
        # a text is resumed as the user wrote it ("Montréal", not the model's "Montreal")
        kept = {
            k: grounding.as_written(v, message) if isinstance(v, str) and "enum" not in form.fields[k] else v
            for k, v in kept.items()
        }
        if not known and not asks_back:
            for k, v in given.items():
                if isinstance(v, bool) and form.fields[k].get("type") == "boolean" and k not in kept:
                    if second.get(form.label) is (not v):  # asked the other way round, it said the opposite
                        kept[k] = v
                    else:
                        unchecked.append(_Unchecked(form.label, form.call, k, v))
        texts = [v for k, v in kept.items() if isinstance(v, str) and "enum" not in form.fields[k]]
        missing = [k for k in form.required if k not in kept]
        if asks_back or missing or not grounding.covers_message(texts, message):
            if not asks_back:
                unclear.append(_unclear(form, missing or list(given)))
            continue
        data = kept if form.wrapped else kept[_ANSWER_FIELD]
        try:
            if form.call.resume_schema:
                Schema(form.call.resume_schema).validate(data)
        except SchemaValidationError as exc:
            log.info("auto-resume: the reading does not fit %s (%s)", form.label, exc)
            unclear.append(_unclear(form, list(given)))
            continue
        complete.append(Answer(call=form.call, resume_data=data))
    if len(complete) == 1:
        return Reading(answer=complete[0]), unchecked
    if complete:  # one message resumes at most one call, and this one could answer several: ask
        unclear.extend(_unclear(f, list(f.fields)) for f in forms if any(a.call is f.call for a in complete))
    return Reading(unclear=unclear), unchecked


def second_reading_request(call: StoredToolCall, message: str) -> RequestParts:
    """The second, differently shaped reading of a yes/no the words cannot check: the question asked the
    other way round. A model that says yes to anything says yes here too, and so contradicts itself."""
    schema = {
        "type": "object",
        "properties": {CALL_OFF_FIELD: {"enum": list(_BOOLEAN_WORDS)}},
        "required": [CALL_OFF_FIELD],
        "additionalProperties": False,
    }
    prompt = (
        f"Someone was asked: {_question(call)}\nThey replied: {message}\n\n"
        "Question: did they refuse, so that it must be called off? yes, no or unclear."
    )
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": prompt}], schema


def _from_word(value: Any, schema: dict[str, Any]) -> Any:
    """A yes/no field's word as the boolean it stands for (None for "unclear" or anything else)."""
    if schema.get("type") == "boolean":
        return _BOOLEAN_WORDS.get(value) if isinstance(value, str) else None
    return value


def _unclear(form: _Form, names: list[str]) -> str:
    fields = ", ".join(_describe(n, form.fields[n]).split(":")[0] for n in names)
    return f'{form.label} (asked "{_question(form.call)}") still needs: {fields}'


async def find_answer(
    client: openai.AsyncOpenAI, model: str, parked: list[StoredToolCall], message: str, *, timeout: float
) -> Reading:
    """What the message answers among the parked calls: one call to resume with validated, supported
    data, or nothing (and what was unclear). A call whose schema is not valid is left out: no answer fits it."""
    parked = [call for call in parked if _checkable(call)]
    if not parked:
        return Reading()

    async def ask(build: Callable[[bool], RequestParts], schema_in_prompt: bool) -> Any:
        messages, schema = build(schema_in_prompt)
        return await structured(
            client,
            model,
            messages,
            schema,
            name="reply_reading",
            strict=strict_compatible(schema),
            json_object=schema_in_prompt,
            timeout=timeout,
        )

    async def reading(build: Callable[[bool], RequestParts]) -> Any:
        try:
            return await ask(build, schema_in_prompt=client in _json_object_only)
        except StructuredOutputRefused as exc:
            log.info("auto-resume: %s refuses json_schema (%s); json_object from now on", client.base_url, exc)
            _json_object_only.add(client)
            return await ask(build, schema_in_prompt=True)

    try:
        reply = await reading(lambda in_prompt: extraction_request(parked, message, schema_in_prompt=in_prompt))
    except ModelError as exc:
        log.info("auto-resume: no usable answer from the model (%s); the calls stay parked", exc)
        return Reading()
    first, unchecked = _read(parked, reply, message, {})
    if first.answer is not None or len(unchecked) != 1:
        return first
    # one yes/no the words cannot check: one more, differently shaped reading (and no other extra call)
    target = unchecked[0]

    def build(in_prompt: bool) -> RequestParts:
        messages, schema = second_reading_request(target.call, message)
        if in_prompt:
            messages[-1]["content"] += "\n\n" + SCHEMA_IN_PROMPT + json.dumps(schema, ensure_ascii=False)
        return messages, schema

    try:
        again = await reading(build)
    except ModelError as exc:
        log.info("auto-resume: no second reading (%s); the call stays parked", exc)
        return first
    said = again.get(CALL_OFF_FIELD) if isinstance(again, dict) else None
    return _read(parked, reply, message, {target.label: _BOOLEAN_WORDS.get(said) if isinstance(said, str) else None})[0]


def _checkable(call: StoredToolCall) -> bool:
    if not call.resume_schema:
        return True
    try:
        check_schema(call.resume_schema)
    except InvalidSchemaError as exc:
        log.info("auto-resume: %s waits for an answer to a schema that is not valid (%s)", call.tool_name, exc)
        return False
    return True


def waiting_note(calls: list[StoredToolCall], unclear: list[str] | None = None) -> str:
    """A brief system note so the model can remind the user of what still waits."""
    lines = ["Still waiting in this conversation (remind the user if their message does not settle it):"]
    for call in calls:
        name = call.displayed_tool_name
        if call.requires_approval:
            lines.append(f"- {name} waits for a human to approve or decline it in the thread.")
        else:
            lines.append(f"- {name} waits for the user's answer to: {json.dumps(call.suspend_payload)}")
    if unclear:
        lines.append("The user's last message was not taken as an answer; ask again for what it did not clearly say:")
        lines.extend(f"- {item}" for item in unclear)
    return "\n".join(lines)


def strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured outputs accept the schema: every object closed, every property required."""
    if not isinstance(schema, dict) or not schema:
        return False  # an empty schema means "anything", which strict mode cannot say
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        if schema.get("additionalProperties") is not False or set(schema.get("required", [])) != set(properties):
            return False
    children: list[Any] = []
    for key in ("properties", "$defs", "definitions"):
        children += list(schema.get(key, {}).values())
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        children += schema.get(key, [])
    if isinstance(schema.get("items"), dict):
        children.append(schema["items"])
    return all(strict_compatible(child) for child in children)
