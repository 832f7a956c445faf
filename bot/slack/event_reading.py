"""Which Slack events the bot answers, read from an event's own fields (pure functions, no Slack calls).

Shared by the listeners and by the intake that records an event before Bolt dispatches it; kept out
of both so that neither imports the other.
"""

from __future__ import annotations

from typing import Any

from .threads import SlackThread, thread_of_message

KEPT_FIELDS = ("type", "user", "text", "ts", "thread_ts", "channel", "channel_type", "team")
"""What a queued message keeps of its event: what its turn reads."""


def is_from_a_person(event: dict[str, Any]) -> bool:
    """A plain new message by a user: not a bot's, not an edit or deletion, no other subtype."""
    return (
        not event.get("subtype")
        and not event.get("bot_id")
        and not event.get("bot_profile")
        and bool(event.get("user"))
        and "text" in event
    )


def team_of(body: dict[str, Any], event: dict[str, Any], fallback: str | None = None) -> str:
    return body.get("team_id") or event.get("team") or fallback or ""


def thread_to_answer(event: dict[str, Any], team_id: str, bot_user_id: str | None) -> SlackThread | None:
    """The thread whose conversation `event` may continue, or None if the bot does not answer it.

    A thread reply in a channel is queued even before we know the bot takes part in that thread: its
    turn looks that up, in order after the thread's earlier messages (the mention that starts it).
    """
    if event.get("type") not in ("app_mention", "message") or not is_from_a_person(event):
        return None
    if event.get("type") == "message" and event.get("channel_type") != "im":
        if not event.get("thread_ts"):
            return None  # a channel message without a mention is not for the bot
        if bot_user_id and f"<@{bot_user_id}>" in event.get("text", ""):
            return None  # the app_mention event for the same message answers it
    if not event.get("channel") or not event.get("ts"):
        return None
    return thread_of_message(event, team_id)


def kept(event: dict[str, Any]) -> dict[str, Any]:
    return {key: event[key] for key in KEPT_FIELDS if key in event}
