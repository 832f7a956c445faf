"""Messages: in a DM every thread is a conversation; in a channel, a reply in a thread the bot was
mentioned in continues that conversation without a new mention."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from ...services import services_of
from .turn import is_from_a_person, team_of, thread_to_answer

__all__ = ["handle_message", "is_from_a_person"]


async def handle_message(event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext) -> None:
    """Acknowledged already (the message was queued before the ack): take the thread's turns."""
    thread = thread_to_answer(event, team_of(body, event, context.team_id), context.bot_user_id)
    if thread is not None and body.get("event_id"):
        await services_of(context).turns.arrived(thread, body["event_id"])
