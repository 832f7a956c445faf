"""A clear "never mind" / "cancel that" in a thread withdraws the call that waits there (`_cancelling` says
what a cancel is; this module reads the thread's message for one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory import StoredToolCall

from ._authorize import Action
from ._deciding import DecidingAgent, check_action, decide_as
from ._results import Decided
from ._stream import AgentStream
from .languages import says_cancel
from .types import Cancel


async def cancel_in_thread(
    agent: DecidingAgent,
    waiting: Sequence[StoredToolCall],
    message: str,
    speaker: str | None,
    user_messages: Sequence[dict[str, Any]],
) -> AgentStream | None:
    """A clear "never mind" / "cancel that" in the thread (in any language of `languages`) withdraws the
    call that waits there, the latest first, if the rule lets `speaker` cancel it: the run goes on with the
    message in its history and the model told. None when the message is no such phrase, or cancels nothing
    (then it is an ordinary turn)."""
    if not waiting or not says_cancel(message):
        return None
    latest_first = sorted(waiting, key=lambda c: (c.suspended_at is not None, c.suspended_at), reverse=True)
    for call in latest_first:
        # a message the rule does not let cancel this call is a turn of its own, not a refused click
        if await check_action(agent, call.run_id, call.tool_call_id, Action.CANCEL, actor=speaker, via="thread",
                              audit=False) is not None:  # fmt: skip
            continue
        result = await decide_as(
            agent, call.run_id, call.tool_call_id, Cancel(), actor=speaker, via="thread", user_messages=user_messages
        )
        if isinstance(result, Decided):
            return result.stream
    return None


__all__ = ["cancel_in_thread"]
