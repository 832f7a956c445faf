"""Slack for the tests: the emulated workspace the tests talk in, and a sender of the signed requests
Slack sends a bot (events, clicks, modal submissions).

The Web API itself is `bot.slack_emulator` (the one emulation the playground also runs):

    async with SlackEmulator(slack_workspace()) as slack:
        app = create_slack_app(..., api_url=slack.api_url)
        sender = SignedSender(events_url, SIGNING_SECRET, slack=slack)

`SignedSender` posts events, block actions and view submissions to a Bolt app's `/slack/events`,
signed with the real signing secret (`X-Slack-Signature` v0), as Slack does. Given the emulator, the
messages people send also appear in its workspace, and a click carries a trigger_id the emulated
`views.open` accepts, as in Slack.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

from bot.slack_emulator import (
    BOT_ID,
    BOT_USER_ID,
    TEAM_ID,
    Channel,
    Message,
    Person,
    SlackEmulator,
    UserGroup,
    Workspace,
)

__all__ = ["BOT_ID", "BOT_USER_ID", "TEAM_ID", "SignedSender", "slack_workspace"]

PEOPLE = ("U1", "U2", "U3", "U7", "U9")


def slack_workspace() -> Workspace:
    """The team the tests talk in: people U1, U2, U3, U7, U9 (U1 an admin), public channels C1 and C2,
    a private channel CPRIVATE the bot is not in, the DM D1 between U1 and the bot, and the user group
    S1 (U1, U2)."""
    people = [Person(id=user, name=user.lower(), real_name=f"User {user}", is_admin=user == "U1") for user in PEOPLE]
    channels = [
        Channel(id="C1", name="general"),
        Channel(id="C2", name="random"),
        Channel(id="CPRIVATE", name="secret", is_private=True, members=("U1",)),
        Channel(id="D1", name="User U1", is_im=True, members=("U1", BOT_USER_ID)),
    ]
    return Workspace(
        people,
        bot_name="Test Bot",
        channels=channels,
        usergroups=[UserGroup(id="S1", handle="leads", users=("U1", "U2"))],
    )


class SignedSender:
    """Posts signed requests to a Bolt app's events URL, as Slack does."""

    def __init__(self, url: str, signing_secret: str, *, team_id: str = TEAM_ID, slack: SlackEmulator | None = None):
        self.url = url
        self.verifier = SignatureVerifier(signing_secret)
        self.team_id = team_id
        self.slack = slack
        self._ts = itertools.count(1)

    async def post(
        self, body: str, *, content_type: str, headers: dict[str, str] | None = None, signature: str | None = None
    ) -> tuple[int, str]:
        timestamp = str(int(time.time()))
        all_headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": signature or self.verifier.generate_signature(timestamp=timestamp, body=body),
            **(headers or {}),
        }
        async with (
            aiohttp.ClientSession() as session,
            session.post(self.url, data=body.encode(), headers=all_headers) as response,
        ):
            return response.status, await response.text()

    def trigger_for(self, user: str) -> str:
        """A trigger_id for an interaction by `user` (one the emulator's views.open accepts, if given)."""
        if self.slack is None:
            return "trigger-" + uuid.uuid4().hex[:8]
        return self.slack.workspace.new_trigger(user)

    def _record(self, event: dict[str, Any]) -> None:
        """A person's message appears in the emulated workspace as they send it."""
        if self.slack is None or event.get("type") not in ("message", "app_mention"):
            return
        if event.get("subtype") or event.get("bot_id") or event.get("user") not in self.slack.workspace.people:
            return
        if event.get("channel") in self.slack.workspace.channels:
            self.slack.person_says(
                event["channel"], event["user"], event.get("text", ""), ts=event["ts"], thread_ts=event.get("thread_ts")
            )

    # --- events -----------------------------------------------------------------------------
    def new_ts(self) -> str:
        """A new message ts; from the emulated workspace's clock when there is one, so that, as in Slack,
        a thread's replies are always later than its parent (conversations.replies lists the parent first)."""
        if self.slack is not None:
            return self.slack.workspace.next_ts()
        return f"{1_800_000_000 + next(self._ts)}.000200"

    async def event(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        """An Events API delivery of `event` (Slack's retries carry the same `event_id` and X-Slack-Retry-Num)."""
        self._record(event)
        body = {
            "token": "verification-token-unused",
            "team_id": self.team_id,
            "api_app_id": "A0APP",
            "event": event,
            "type": "event_callback",
            "event_id": event_id or "Ev" + uuid.uuid4().hex[:12].upper(),
            "event_time": int(time.time()),
            "authorizations": [{"team_id": self.team_id, "user_id": BOT_USER_ID, "is_bot": True}],
        }
        headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"} if retry_num else {}
        return await self.post(json.dumps(body), content_type="application/json", headers=headers)

    def mention(
        self, text: str, *, user: str = "U1", channel: str = "C1", ts: str | None = None, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """An `app_mention` event: `<@bot> text` in a channel."""
        event = {
            "type": "app_mention",
            "user": user,
            "text": f"<@{BOT_USER_ID}> {text}",
            "ts": ts or self.new_ts(),
            "channel": channel,
            "event_ts": ts,
            "team": self.team_id,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    def message(
        self,
        text: str,
        *,
        user: str = "U1",
        channel: str = "C1",
        ts: str | None = None,
        thread_ts: str | None = None,
        channel_type: str = "channel",
        **extra: Any,
    ) -> dict[str, Any]:
        """A `message` event."""
        event = {
            "type": "message",
            "user": user,
            "text": text,
            "ts": ts or self.new_ts(),
            "channel": channel,
            "channel_type": channel_type,
            "team": self.team_id,
            **extra,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        return event

    # --- interactivity ----------------------------------------------------------------------
    async def interaction(self, payload: dict[str, Any]) -> tuple[int, str]:
        body = urlencode({"payload": json.dumps(payload)})
        return await self.post(body, content_type="application/x-www-form-urlencoded")

    async def click(
        self, message: Message, action_id: str, *, user: str = "U1", value: str | None = None
    ) -> tuple[int, str]:
        """A block_actions payload for a click on `message`'s button `action_id` (`value` forges another)."""
        payload = {
            "type": "block_actions",
            "team": {"id": self.team_id, "domain": "stub"},
            "user": {"id": user, "username": user.lower(), "team_id": self.team_id},
            "api_app_id": "A0APP",
            "token": "verification-token-unused",
            "container": {
                "type": "message",
                "message_ts": message.ts,
                "channel_id": message.channel,
                "is_ephemeral": False,
                "thread_ts": message.thread_ts,
            },
            "trigger_id": self.trigger_for(user),
            "channel": {"id": message.channel, "name": "general"},
            "message": {
                "type": "message",
                "ts": message.ts,
                "thread_ts": message.thread_ts,
                "text": message.text,
                "blocks": message.blocks,
                "bot_id": BOT_ID,
            },
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "tool_call_decision",
                    "value": value if value is not None else message.button_value(action_id),
                    "action_ts": str(time.time()),
                }
            ],
        }
        return await self.interaction(payload)

    async def submit(
        self, view: dict[str, Any], values: dict[str, dict[str, Any]], *, user: str = "U1"
    ) -> tuple[int, str]:
        """A view_submission of `view` (as opened) with `values` (block_id -> {action_id: value})."""
        payload = {
            "type": "view_submission",
            "team": {"id": self.team_id, "domain": "stub"},
            "user": {"id": user, "username": user.lower(), "team_id": self.team_id},
            "api_app_id": "A0APP",
            "token": "verification-token-unused",
            "trigger_id": self.trigger_for(user),
            "view": {**view, "state": {"values": values}, "team_id": self.team_id, "app_id": "A0APP", "bot_id": BOT_ID},
        }
        return await self.interaction(payload)
