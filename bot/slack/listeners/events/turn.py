"""Which messages the bot answers, and one message's turn once the thread's queue reaches it.

A mention in a channel starts (or continues) a conversation in that message's thread; in a DM every
thread is a conversation; in a channel, a reply in a thread the bot was mentioned in continues that
conversation without a new mention.
"""

from __future__ import annotations

from typing import Any

from ...conversation import answer_message, strip_mention
from ...event_reading import KEPT_FIELDS, is_from_a_person, kept, team_of, thread_to_answer
from ...lost_answers import show_lost_answer
from ...services import SlackServices
from ...stores import QueuedMessage
from ...threads import thread_of_message

__all__ = ["KEPT_FIELDS", "is_from_a_person", "kept", "take_turn", "team_of", "thread_to_answer"]


async def take_turn(services: SlackServices, client: Any, message: QueuedMessage) -> None:
    """Answer one queued message (its thread's earlier messages are answered already)."""
    event = message.event
    thread = thread_of_message(event, message.team_id)
    text = event.get("text", "")
    conversation = message.conversation  # read (or recorded) when the turn was started (`SlackStores`)
    if message.starts_conversation:
        text = strip_mention(text, message.bot_user_id)
    if conversation is None:
        return  # a thread the bot takes no part in
    await answer_message(
        services,
        client,
        thread=thread,
        user=event["user"],
        text=text,
        owner=conversation.started_by,
        new=message.new_conversation,
        message_id=event.get("ts"),
        conversation=conversation,
    )


async def reached_the_agent(services: SlackServices, message: QueuedMessage) -> bool:
    """Whether the runtime took a message whose turn was started by a replica that then stopped: the
    user's message is in the thread's memory since the turn started (a run was started on it, or it
    answered a waiting call). Without memory nobody can tell, and the message is not answered again."""
    memory = services.agent.memory
    if memory is None or message.started_at is None:
        return True
    ts = message.event.get("ts")
    if ts and await memory.taken_by(message.thread_id, str(ts)) is not None:
        return True
    return await memory.user_spoke_since(message.thread_id, message.started_at)


async def answered_already(services: SlackServices, message: QueuedMessage, client: Any = None) -> bool:
    """Whether a message whose turn a stopped (or stalled) replica started was answered all the same: its
    run finished. Then nothing is said: "please send it again" after the answer would be false. A run that
    completed has its answer stored: shown now in the thread if the stopped replica never showed it
    (`lost_answers`; with `client`)."""
    memory = services.agent.memory
    if memory is None or message.started_at is None:
        return False
    ts = message.event.get("ts")
    taken = await memory.run_that_took(message.thread_id, str(ts)) if ts else None
    status = None if taken is None else taken[1]
    if taken is not None and status == "completed" and client is not None:
        thread = thread_of_message(message.event, message.team_id)
        await show_lost_answer(services, client, thread, taken[0], requester=message.event.get("user") or "")
    if status is not None and status != "running":
        # answered, or waiting for a person (its approval or question is in the thread; the run goes on after
        # the decision): "please send it again" would be false
        return True
    return await memory.answered_since(message.thread_id, message.started_at)
