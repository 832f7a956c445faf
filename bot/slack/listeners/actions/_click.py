"""What a button click says, read from a block_actions payload (and trusted no further than that)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Click:
    user_id: str
    channel: str | None
    message_ts: str | None
    thread_ts: str | None
    ref: str | None
    """The button's value: an opaque reference, checked before use."""
    trigger_id: str | None


def click_of(body: dict[str, Any]) -> Click:
    container = body.get("container") or {}
    message = body.get("message") or {}
    actions = body.get("actions") or [{}]
    return Click(
        user_id=(body.get("user") or {}).get("id", ""),
        channel=(body.get("channel") or {}).get("id") or container.get("channel_id"),
        message_ts=container.get("message_ts") or message.get("ts"),
        thread_ts=message.get("thread_ts") or container.get("thread_ts"),
        ref=actions[0].get("value"),
        trigger_id=body.get("trigger_id"),
    )
