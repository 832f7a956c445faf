"""A mention in a channel starts (or continues) a conversation in that message's thread."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...conversation import answer_message, strip_mention
from ...services import services_of
from ...threads import thread_of_message
from .message import is_from_a_person


async def handle_app_mention(
    event: dict[str, Any],
    body: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
    logger: logging.Logger,
) -> None:
    """Events are acknowledged by Bolt before this runs."""
    if not is_from_a_person(event):
        return
    services = services_of(context)
    thread = thread_of_message(event, body.get("team_id") or event.get("team") or context.team_id or "")
    conversation = await services.store.start_conversation(thread, event["user"])
    text = strip_mention(event.get("text", ""), context.bot_user_id)
    await answer_message(services, client, thread=thread, user=event["user"], text=text, owner=conversation.started_by)
