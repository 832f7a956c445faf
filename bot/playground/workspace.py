"""The emulated Slack workspace's state, kept in memory: people, channels, messages with threads,
ephemeral messages, open modals, thread statuses. It knows nothing of HTTP; the Web API
(`slack_api`) and the browser routes (`browser`) both read and change it, and every change bumps
`version` so the page's long poll wakes up.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

TEAM_ID = "T0PLAY"
TEAM_NAME = "Playground"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
APP_ID = "A0PLAY"
GENERAL = "C0GENERAL"


@dataclass(frozen=True, kw_only=True)
class Person:
    id: str
    name: str
    real_name: str
    is_bot: bool = False


@dataclass(frozen=True, kw_only=True)
class Channel:
    id: str
    name: str
    is_im: bool = False
    members: tuple[str, ...] = ()
    """Who sees it (a DM: its person and the bot; a public channel: everyone, left empty)."""

    def visible_to(self, user_id: str) -> bool:
        return not self.members or user_id in self.members


@dataclass(kw_only=True)
class Message:
    channel: str
    ts: str
    user: str
    """The author: a person's id, or the bot's user id."""
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    format: str = "mrkdwn"
    """How `text` is written: `mrkdwn` (chat.postMessage) or `markdown` (a streamed answer)."""
    streaming: bool = False
    edited: bool = False
    ephemeral_to: str | None = None
    """An ephemeral message: the one person who sees it."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "channel": self.channel,
            "ts": self.ts,
            "user": self.user,
            "text": self.text,
            "blocks": self.blocks,
            "thread_ts": self.thread_ts,
            "format": self.format,
            "streaming": self.streaming,
            "edited": self.edited,
            "ephemeral": self.ephemeral_to is not None,
        }
        if self.user == BOT_USER_ID:
            out["bot_id"] = BOT_ID
        return out


@dataclass(kw_only=True)
class Modal:
    id: str
    user: str
    view: dict[str, Any]
    errors: dict[str, str] = field(default_factory=dict)


def demo_people(bot_name: str = "Demo Agent") -> list[Person]:
    """Two people, so an approval by someone other than the requester can be tried, and the bot."""
    return [
        Person(id="UALICE", name="alice", real_name="Alice"),
        Person(id="UBOB", name="bob", real_name="Bob"),
        Person(id=BOT_USER_ID, name="bot", real_name=bot_name, is_bot=True),
    ]


class Workspace:
    """One team: #general, a DM with the bot for each person, and whatever is said in them."""

    def __init__(self, people: list[Person] | None = None, *, bot_name: str = "Demo Agent"):
        self.people = {person.id: person for person in people or demo_people(bot_name)}
        humans = [person for person in self.people.values() if not person.is_bot]
        self.channels: dict[str, Channel] = {GENERAL: Channel(id=GENERAL, name="general")}
        for person in humans:
            dm = Channel(id=f"D{person.id}", name=person.real_name, is_im=True, members=(person.id, BOT_USER_ID))
            self.channels[dm.id] = dm
        self.messages: dict[tuple[str, str], Message] = {}
        self.modals: dict[str, list[Modal]] = {}
        """Each person's stack of open modals (views.push adds to the top)."""
        self.triggers: dict[str, tuple[str, float]] = {}
        """trigger_id -> (the person who clicked, when): views.open needs a fresh one."""
        self.statuses: dict[tuple[str, str], str] = {}
        """(channel, thread_ts) -> the assistant status shown under the thread ("is thinking…")."""
        self.home_views: dict[str, dict[str, Any]] = {}
        self.version = 0
        self._changed = asyncio.Event()
        self._last_ts = 0.0

    # --- changes ----------------------------------------------------------------------------
    def changed(self) -> None:
        self.version += 1
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()

    async def wait_for_change(self, since: int, timeout: float) -> None:
        """Return once `version` is past `since`, or after `timeout` seconds."""
        if self.version > since:
            return
        try:
            await asyncio.wait_for(self._changed.wait(), timeout)
        except TimeoutError:
            pass

    def next_ts(self) -> str:
        """A message timestamp as Slack writes them, unique and increasing (so a memory thread of an earlier
        run, kept in the database, is never mistaken for a new one)."""
        now = max(time.time(), self._last_ts + 0.000001)
        self._last_ts = now
        return f"{now:.6f}"

    # --- messages ---------------------------------------------------------------------------
    def post(self, channel: str, user: str, text: str = "", **fields: Any) -> Message:
        message = Message(channel=channel, ts=self.next_ts(), user=user, text=text, **fields)
        self.messages[(channel, message.ts)] = message
        self.changed()
        return message

    def message(self, channel: str, ts: str) -> Message | None:
        return self.messages.get((channel, ts))

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The thread's parent and replies (ephemeral ones left out), oldest first."""
        found = [
            m
            for m in self.messages.values()
            if m.channel == channel and m.ephemeral_to is None and (m.ts == thread_ts or m.thread_ts == thread_ts)
        ]
        return sorted(found, key=lambda m: float(m.ts))

    def visible_messages(self, user_id: str) -> list[Message]:
        """Every message `user_id` can see, oldest first."""
        found = [
            m
            for m in self.messages.values()
            if self.channels[m.channel].visible_to(user_id) and m.ephemeral_to in (None, user_id)
        ]
        return sorted(found, key=lambda m: float(m.ts))

    # --- modals -----------------------------------------------------------------------------
    def new_trigger(self, user_id: str) -> str:
        trigger_id = f"{int(time.time())}.{uuid.uuid4().int % 10**12}.{uuid.uuid4().hex[:16]}"
        self.triggers[trigger_id] = (user_id, time.monotonic())
        return trigger_id

    def use_trigger(self, trigger_id: str | None) -> str | None:
        """The person a fresh trigger belongs to (Slack: valid once, for 3 seconds; here a little longer)."""
        user_and_time = self.triggers.pop(trigger_id or "", None)
        if user_and_time is None or time.monotonic() - user_and_time[1] > 30:
            return None
        return user_and_time[0]

    def open_modal(self, user_id: str, view: dict[str, Any], *, push: bool = False) -> Modal:
        modal = Modal(id="V" + uuid.uuid4().hex[:10].upper(), user=user_id, view=with_ids(view))
        stack = self.modals.setdefault(user_id, [])
        if not push:
            stack.clear()
        stack.append(modal)
        self.changed()
        return modal

    def find_modal(self, view_id: str | None = None, external_id: str | None = None) -> Modal | None:
        for stack in self.modals.values():
            for modal in stack:
                if (view_id and modal.id == view_id) or (external_id and modal.view.get("external_id") == external_id):
                    return modal
        return None

    def close_modal(self, modal: Modal, *, all_of_them: bool = False) -> None:
        stack = self.modals.get(modal.user, [])
        if all_of_them:
            stack.clear()
        elif modal in stack:
            stack.remove(modal)
        self.changed()

    def set_status(self, channel: str, thread_ts: str, status: str) -> None:
        if status:
            self.statuses[(channel, thread_ts)] = status
        else:
            self.statuses.pop((channel, thread_ts), None)
        self.changed()

    # --- what the page shows ----------------------------------------------------------------
    def snapshot(self, user_id: str) -> dict[str, Any]:
        """Everything `user_id` sees, as the page renders it."""
        return {
            "version": self.version,
            "team": {"id": TEAM_ID, "name": TEAM_NAME},
            "me": user_id,
            "bot_user_id": BOT_USER_ID,
            "people": [
                {"id": p.id, "name": p.name, "real_name": p.real_name, "is_bot": p.is_bot} for p in self.people.values()
            ],
            "channels": [
                {"id": c.id, "name": c.name, "is_im": c.is_im} for c in self.channels.values() if c.visible_to(user_id)
            ],
            "messages": [m.to_json() for m in self.visible_messages(user_id)],
            "statuses": [
                {"channel": channel, "thread_ts": ts, "status": status}
                for (channel, ts), status in self.statuses.items()
                if self.channels[channel].visible_to(user_id)
            ],
            "modal": _modal_json(self.modals.get(user_id)),
            "home": self.home_views.get(user_id),
        }


def _modal_json(stack: list[Modal] | None) -> dict[str, Any] | None:
    if not stack:
        return None
    top = stack[-1]
    return {"id": top.id, "view": top.view, "errors": top.errors, "depth": len(stack)}


def with_ids(view: dict[str, Any]) -> dict[str, Any]:
    """The view with a block_id on every block and an action_id on every input element, as Slack assigns them."""
    blocks = []
    for index, block in enumerate(with_block_ids(view.get("blocks") or [])):
        element = block.get("element")
        if isinstance(element, dict) and "action_id" not in element:
            block = {**block, "element": {**element, "action_id": f"a{index}_{uuid.uuid4().hex[:6]}"}}
        blocks.append(block)
    return {**view, "blocks": blocks}


def with_block_ids(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The blocks, each with a block_id (Slack makes one up for a block sent without)."""
    return [block if "block_id" in block else {**block, "block_id": uuid.uuid4().hex[:5]} for block in blocks]
