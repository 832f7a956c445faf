"""A mention in a channel starts (or continues) a conversation in that message's thread."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from ...services import services_of
from .turn import team_of, thread_to_answer


async def handle_app_mention(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
    """Acknowledged already (the message was queued before the ack): take the thread's turns."""
    thread = thread_to_answer(event, team_of(body, event, context.team_id), context.bot_user_id)
    if thread is not None and body.get("event_id"):
        await services_of(context).turns.arrived(thread, body["event_id"])
