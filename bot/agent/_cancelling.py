"""Cancel: withdraw a call while it waits for a person (an approval, or a question its tool asked).

A cancel is a decision of the one engine (`Agent.decide_as`): the rule says who may (whoever may decide the
call, and admins), one conditional UPDATE moves the call to `cancelled`, and the run goes on with the model
told that the call was cancelled, which is neither a decline nor an expiry. A live question (an MCP
server's, held open in one process) is cancelled as it always was: its server hears `cancel`."""

from __future__ import annotations

from typing import Any

from memory import StoredToolCall

from .types import Cancel, CancelQuestion, Decision


def as_decided(call: StoredToolCall, decision: Decision) -> Decision:
    """The decision as the engine makes it about `call`: a `Cancel` of a live question is its
    `CancelQuestion` (the server hears `cancel` and its call goes on)."""
    if isinstance(decision, Cancel) and call.held_by:
        return CancelQuestion(reason=decision.reason)
    return decision


def cancelled_message(call: StoredToolCall, cancelled_by: str | None, reason: str | None) -> dict[str, Any]:
    """The tool message the model reads when a person cancelled the call while it waited (stored with the
    decision): it did not run (or, for a question, did not complete), and nobody declined it."""
    who = f"The user {cancelled_by}" if cancelled_by else "The user"
    if call.requires_approval:
        content = f"{who} cancelled this tool call while it waited for approval, so it was not run."
    else:
        content = f"{who} cancelled the question this tool asked, before it was answered, so the tool did not complete."
    content += " It was cancelled, not declined: do not retry it unless the user asks again."
    if reason:
        content += f" Reason: {reason}"
    return {"role": "tool", "tool_call_id": call.tool_call_id, "content": content}


__all__ = ["as_decided", "cancelled_message"]
