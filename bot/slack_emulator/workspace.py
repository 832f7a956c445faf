"""The emulated Slack workspace's state: people, user groups, channels, messages with threads, ephemeral
messages, open modals, App Home views, thread statuses.

It knows nothing of HTTP; the Web API (`web_api`) and the playground's page both read and change it.
Every change bumps `version` (so a long poll wakes up) and tells the `on_change` listeners which
message or modal changed (so the playground can store it).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

TEAM_ID = "T0PLAY"
TEAM_NAME = "Playground"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
APP_ID = "A0PLAY"
GENERAL = "C0GENERAL"
MODAL_STACK_LIMIT = 3
"""Slack keeps at most three views in a modal's stack (views.push beyond that: `push_limit_reached`)."""


@dataclass(frozen=True, kw_only=True)
class Person:
    id: str
    name: str
    real_name: str
    is_bot: bool = False
    is_admin: bool = False
    is_owner: bool = False
    locale: str | None = None
    """The language the person set in Slack (`en-US`, `zh-TW`, `ja-JP`...); None: Slack gives none."""

    def to_json(self, *, include_locale: bool = False) -> dict[str, Any]:
        """The user object of `users.info`; its `locale` only when asked for (`include_locale`), as Slack."""
        locale = {"locale": self.locale} if include_locale and self.locale else {}
        return locale | {
            "id": self.id,
            "team_id": TEAM_ID,
            "name": self.name,
            "real_name": self.real_name,
            "deleted": False,
            "is_bot": self.is_bot,
            "is_admin": self.is_admin,
            "is_owner": self.is_owner,
            "is_primary_owner": self.is_owner,
            "tz": "UTC",
            "profile": {"real_name": self.real_name, "display_name": self.real_name},
        }


@dataclass(frozen=True, kw_only=True)
class Channel:
    id: str
    name: str
    is_im: bool = False
    is_private: bool = False
    members: tuple[str, ...] = ()
    """Who is in it (a DM: its person and the bot). Empty: a public channel everyone is in."""

    def visible_to(self, user_id: str) -> bool:
        return not self.members or user_id in self.members


@dataclass(frozen=True, kw_only=True)
class UserGroup:
    id: str
    handle: str
    users: tuple[str, ...] = ()


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
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every earlier version ({"text", "blocks"}) of the message, oldest first."""

    @property
    def all_text(self) -> str:
        """The text and every text of the blocks: what a person reads."""
        return "\n".join(part for part in (self.text, blocks_text(self.blocks)) if part)

    def action_ids(self) -> list[str]:
        """The action_ids of the message's buttons and menus, in order."""
        return [
            element.get("action_id")
            for block in self.blocks
            if block.get("type") == "actions"
            for element in block.get("elements", [])
        ]

    def button_value(self, action_id: str) -> str | None:
        for block in self.blocks:
            for element in block.get("elements", []) if block.get("type") == "actions" else []:
                if element.get("action_id") == action_id:
                    return element.get("value")
        return None

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

    def to_api(self) -> dict[str, Any]:
        """The message as the Web API returns it (conversations.replies, chat.postMessage)."""
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "user": self.user, "text": self.text}
        if self.blocks:
            out["blocks"] = self.blocks
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if self.user == BOT_USER_ID:
            out["bot_id"] = BOT_ID
        return out


@dataclass(kw_only=True)
class Modal:
    id: str
    user: str
    view: dict[str, Any]
    errors: dict[str, str] = field(default_factory=dict)
    hash: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    """Changes on every update; views.update with an old hash answers `hash_conflict`."""


def demo_people(bot_name: str = "Demo Agent") -> list[Person]:
    """Three people, so an approval by someone other than the requester (and a second one, four eyes) can
    be tried, each reading their own language, and the bot. Alice is the workspace's owner and an admin
    and reads English, Bob Traditional Chinese, Carol Korean."""
    return [
        Person(id="UALICE", name="alice", real_name="Alice", is_admin=True, is_owner=True, locale="en-US"),
        Person(id="UBOB", name="bob", real_name="Bob", locale="zh-TW"),
        Person(id="UCAROL", name="carol", real_name="Carol", locale="ko-KR"),
        Person(id=BOT_USER_ID, name="bot", real_name=bot_name, is_bot=True),
    ]


class Workspace:
    """One team: #general, a DM with the bot for each person, and whatever is said in them."""

    def __init__(
        self,
        people: list[Person] | None = None,
        *,
        bot_name: str = "Demo Agent",
        channels: list[Channel] | None = None,
        usergroups: list[UserGroup] | None = None,
    ):
        self.people = {person.id: person for person in people or demo_people(bot_name)}
        if BOT_USER_ID not in self.people:
            self.people[BOT_USER_ID] = Person(id=BOT_USER_ID, name="bot", real_name=bot_name, is_bot=True)
        humans = [person for person in self.people.values() if not person.is_bot]
        self.channels: dict[str, Channel] = {}
        for channel in channels or [Channel(id=GENERAL, name="general")]:
            self.channels[channel.id] = channel
        for person in humans:
            dm = Channel(id=f"D{person.id}", name=person.real_name, is_im=True, members=(person.id, BOT_USER_ID))
            self.channels.setdefault(dm.id, dm)
        self.usergroups = {group.id: group for group in usergroups or []}
        self.messages: dict[tuple[str, str], Message] = {}
        self.modals: dict[str, list[Modal]] = {}
        """Each person's stack of open modals (views.push adds to the top)."""
        self.triggers: dict[str, tuple[str, float]] = {}
        """trigger_id -> (the person who clicked, when): views.open needs a fresh one."""
        self.statuses: dict[tuple[str, str], str] = {}
        """(channel, thread_ts) -> the assistant status shown under the thread ("is thinking…")."""
        self.suggested_prompts: dict[str, dict[str, Any]] = {}
        """channel -> {"title", "prompts": [{"title", "message"}]}: what assistant.threads.setSuggestedPrompts set."""
        self.home_views: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.on_change: list[Callable[[Message | Modal | None], None]] = []
        """Called with what changed (a message, a modal, or None for anything else)."""
        self._changed = asyncio.Event()
        self._last_ts = 0.0

    # --- changes ----------------------------------------------------------------------------
    def set_locale(self, user_id: str, locale: str | None) -> None:
        """The person changed their language in Slack's preferences."""
        self.people[user_id] = dataclasses.replace(self.people[user_id], locale=locale)
        self.changed()

    def changed(self, what: Message | Modal | None = None) -> None:
        self.version += 1
        woken, self._changed = self._changed, asyncio.Event()
        woken.set()
        for listener in self.on_change:
            listener(what)

    async def wait_for_change(self, since: int, timeout: float) -> None:
        """Return once `version` is no longer `since` (a change, or a page that saw an earlier run of the
        playground), or after `timeout` seconds."""
        if self.version != since:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._changed.wait()

    def next_ts(self) -> str:
        """A message timestamp as Slack writes them, unique and increasing (so a memory thread of an earlier
        run, kept in the database, is never mistaken for a new one)."""
        now = max(time.time(), self._last_ts + 0.000001)
        self._last_ts = now
        return f"{now:.6f}"

    # --- people and channels ----------------------------------------------------------------
    def dm_of(self, user_id: str) -> Channel | None:
        """The bot's DM with a person (Slack lets a user id stand for it)."""
        return self.channels.get(f"D{user_id}")

    def channel_id(self, channel: Any) -> str:
        """A channel id; a person's id names their DM with the bot, as in Slack."""
        channel = str(channel or "")
        if channel in self.people and self.dm_of(channel) is not None:
            return f"D{channel}"
        return channel

    # --- messages ---------------------------------------------------------------------------
    def post(self, channel: str, user: str, text: str = "", *, ts: str | None = None, **fields: Any) -> Message:
        message = Message(channel=channel, ts=ts or self.next_ts(), user=user, text=text, **fields)
        self.messages[(channel, message.ts)] = message
        if user == BOT_USER_ID and message.thread_ts and message.ephemeral_to is None:
            # "The status will be automatically cleared when the app sends a reply" (assistant.threads.setStatus)
            self.statuses.pop((channel, message.thread_ts), None)
        self.changed(message)
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

    def use_trigger(self, trigger_id: str | None) -> tuple[str | None, str | None]:
        """(the person a trigger belongs to, None), or (None, Slack's error): a trigger is valid once, for
        3 seconds in Slack (here 30, so a slow test machine does not fail)."""
        user_and_time = self.triggers.pop(trigger_id or "", None)
        if user_and_time is None:
            return None, "invalid_trigger_id"
        if time.monotonic() - user_and_time[1] > 30:
            return None, "expired_trigger_id"
        return user_and_time[0], None

    def open_modal(self, user_id: str, view: dict[str, Any], *, push: bool = False) -> Modal:
        modal = Modal(id="V" + uuid.uuid4().hex[:10].upper(), user=user_id, view=with_ids(view))
        stack = self.modals.setdefault(user_id, [])
        if not push:
            stack.clear()
        stack.append(modal)
        self.changed(modal)
        return modal

    def find_modal(self, view_id: str | None = None, external_id: str | None = None) -> Modal | None:
        for stack in self.modals.values():
            for modal in stack:
                if (view_id and modal.id == view_id) or (external_id and modal.view.get("external_id") == external_id):
                    return modal
        return None

    def update_modal(self, modal: Modal, view: dict[str, Any]) -> None:
        modal.view, modal.errors, modal.hash = with_ids(view), {}, uuid.uuid4().hex[:16]
        self.changed(modal)

    def close_modal(self, modal: Modal, *, all_of_them: bool = False) -> None:
        stack = self.modals.get(modal.user, [])
        if all_of_them:
            stack.clear()
        elif modal in stack:
            stack.remove(modal)
        self.changed(modal)

    def set_status(self, channel: str, thread_ts: str, status: str) -> None:
        if status:
            self.statuses[(channel, thread_ts)] = status
        else:
            self.statuses.pop((channel, thread_ts), None)
        self.changed()


def blocks_text(blocks: Any) -> str:
    """All the text in a list of blocks (sections, contexts, headers, inputs' labels)."""
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
                out.append(node["text"])
                return
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(blocks or [])
    return "\n".join(out)


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
