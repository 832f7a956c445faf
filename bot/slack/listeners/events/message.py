"""Messages: in a DM every thread is a conversation; in a channel, a reply in a thread the bot was
mentioned in continues that conversation without a new mention."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...conversation import answer_message, strip_mention
from ...services import services_of
from ...threads import thread_of_message


def is_from_a_person(event: dict[str, Any]) -> bool:
    """A plain new message by a user: not a bot's, not an edit or deletion, no other subtype."""
    return (
        not event.get("subtype")
        and not event.get("bot_id")
        and not event.get("bot_profile")
        and bool(event.get("user"))
        and "text" in event
    )


async def handle_message(
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
    team_id = body.get("team_id") or event.get("team") or context.team_id or ""
    thread = thread_of_message(event, team_id)
    text = event.get("text", "")
    if event.get("channel_type") == "im":
        conversation = await services.store.start_conversation(thread, event["user"])
        text = strip_mention(text, context.bot_user_id)
    else:
        if not event.get("thread_ts"):
            return  # a channel message without a mention is not for the bot
        if context.bot_user_id and f"<@{context.bot_user_id}>" in text:
            return  # the app_mention event for the same message answers it
        conversation = await services.store.conversation(thread)
        if conversation is None:
            return
    await answer_message(services, client, thread=thread, user=event["user"], text=text, owner=conversation.started_by)
