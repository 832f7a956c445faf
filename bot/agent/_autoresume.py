"""Auto-resume: read the user's next message in a thread as the answer to a call parked by `suspend()`.

One deterministic structured-output request decides which parked call the message answers, if any,
and with what resume data. The prompt holds only what that needs (the question, the schema, the
call's arguments, what was said since it was asked, the new message), so its size does not grow with
the thread. Approvals are never settled here: only calls that suspended themselves are offered.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory.tables import ToolCallRow
from tools import Schema, SchemaValidationError

from ._model import ModelError, structured

if TYPE_CHECKING:
    from ._agent import Agent

log = logging.getLogger(__name__)

NONE = "none"
INSTRUCTIONS = (
    "Tools in this conversation paused to ask the user something. Decide whether the user's new message "
    'answers one of those questions. If it does, set "call" to that call\'s id and "resume_data" to the '
    "answer, in the shape of that call's resume_schema, taking values only from what the user said. If it "
    f'does not answer any of them, set "call" to "{NONE}" and "resume_data" to null. Answer with JSON only.'
)


@dataclass(frozen=True)
class Answer:
    call: ToolCallRow
    resume_data: Any


def extraction_request(parked: list[ToolCallRow], said_since: list[dict[str, Any]], message: str) -> tuple[list, dict]:
    """The messages and the JSON schema of the one extraction request."""
    waiting = [
        {
            "call": call.tool_call_id,
            "tool": call.displayed_tool_name,
            "asked": call.suspend_payload,
            "arguments": call.displayed_args,
            "resume_schema": call.resume_schema or {},
        }
        for call in parked
    ]
    context = {"waiting_calls": waiting, "said_since_the_question": said_since, "new_message": message}
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": json.dumps(context, ensure_ascii=False)},
    ]
    schema = {
        "type": "object",
        "properties": {
            "call": {"type": "string", "enum": [c.tool_call_id for c in parked] + [NONE]},
            "resume_data": {"anyOf": [c.resume_schema or {"type": "object"} for c in parked] + [{"type": "null"}]},
        },
        "required": ["call", "resume_data"],
        "additionalProperties": False,
    }
    return messages, schema


async def find_answer(agent: Agent, parked: list[ToolCallRow], message: str, *, timeout: float) -> Answer | None:
    """The parked call the message answers, with validated resume data; None when it answers none."""
    oldest = min(call.suspended_at for call in parked)
    said_since = await agent.memory.said_since(parked[0].thread_id, oldest) if agent.memory else []
    messages, schema = extraction_request(parked, said_since, message)
    try:
        answer = await structured(
            agent.model_client,
            agent.model,
            messages,
            schema,
            name="resume_answer",
            strict=strict_compatible(schema),
            timeout=timeout,
        )
    except ModelError as exc:
        log.info("auto-resume: no usable answer from the model (%s); the calls stay parked", exc)
        return None
    if not isinstance(answer, dict) or answer.get("call") in (None, NONE):
        return None
    call = next((c for c in parked if c.tool_call_id == answer["call"]), None)
    if call is None:
        return None
    try:
        if call.resume_schema:
            Schema(call.resume_schema).validate(answer.get("resume_data"))
    except SchemaValidationError as exc:
        log.info("auto-resume: the extracted answer does not fit %s (%s)", call.tool_name, exc)
        return None
    return Answer(call=call, resume_data=answer.get("resume_data"))


def waiting_note(calls: list[ToolCallRow]) -> str:
    """A brief system note so the model can remind the user of what still waits."""
    lines = ["Still waiting in this conversation (remind the user if their message does not settle it):"]
    for call in calls:
        name = call.displayed_tool_name
        if call.requires_approval:
            lines.append(f"- {name} waits for a human to approve or decline it in the thread.")
        else:
            lines.append(f"- {name} waits for the user's answer to: {json.dumps(call.suspend_payload)}")
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
