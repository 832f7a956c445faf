"""Which memory thread a Slack message belongs to: one Slack thread is one conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class SlackThread:
    """A Slack thread, the unit of conversation: team, channel and the ts of its first message."""

    team_id: str
    channel: str
    thread_ts: str

    @property
    def thread_id(self) -> str:
        """The memory thread id: `slack:<team>:<channel>:<thread_ts>`."""
        return f"slack:{self.team_id}:{self.channel}:{self.thread_ts}"


def thread_of_message(event: dict[str, Any], team_id: str) -> SlackThread:
    """The thread a message event belongs to; a top-level message starts its own thread."""
    return SlackThread(team_id=team_id, channel=event["channel"], thread_ts=event.get("thread_ts") or event["ts"])


def channel_of_thread(thread_id: str) -> str | None:
    """The channel of a memory thread id this adapter made (`slack:<team>:<channel>:<ts>`); None for another."""
    parts = thread_id.split(":")
    return parts[2] if len(parts) == 4 and parts[0] == "slack" else None
