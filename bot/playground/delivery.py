"""What Slack would send the bot when a person acts in the playground: the payloads (Events API
deliveries, block_actions, view_submission), signed with the run's signing secret (`X-Slack-Signature`
v0) and posted to the bot's real Bolt app at `/slack/events`, so the Slack adapter runs unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

from bot.slack_emulator import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID, Message, Modal, Workspace


@dataclass(frozen=True)
class BotAnswer:
    """The bot's HTTP answer to one delivery."""

    status: int
    body: str

    def json(self) -> dict[str, Any]:
        try:
            value = json.loads(self.body) if self.body.strip() else {}
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


class Delivery:
    """Signs and posts Slack's requests to the bot at `events_url`."""

    def __init__(self, workspace: Workspace, *, events_url: str, signing_secret: str):
        self.workspace = workspace
        self.events_url = events_url
        self.verifier = SignatureVerifier(signing_secret)
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- what a person did ------------------------------------------------------------------
    async def message_posted(self, message: Message) -> list[BotAnswer]:
        """The events Slack sends for a person's new message: `message` always, and `app_mention` too
        when it mentions the bot outside a DM."""
        answers = [await self.post_event(message_event(self.workspace, message))]
        mentioned = f"<@{BOT_USER_ID}>" in message.text
        if mentioned and not self.workspace.channels[message.channel].is_im:
            answers.append(await self.post_event(app_mention_event(message)))
        return answers

    async def button_clicked(self, user_id: str, message: Message, action: dict[str, Any]) -> BotAnswer:
        return await self.post_interaction(block_actions(self.workspace, user_id, message, action))

    async def home_opened(self, user_id: str) -> BotAnswer:
        """The person opened the bot's App Home tab."""
        event = {"type": "app_home_opened", "user": user_id, "channel": "D" + user_id, "tab": "home"}
        return await self.post_event({**event, "event_ts": f"{time.time():.6f}"})

    async def home_clicked(self, user_id: str, view: dict[str, Any], action: dict[str, Any]) -> BotAnswer:
        """A click on a button of the person's App Home: a block_actions from a view, with no channel."""
        view_id = "VHOME" + user_id
        payload = {
            **_envelope("block_actions", user_id),
            "trigger_id": self.workspace.new_trigger(user_id),
            "container": {"type": "view", "view_id": view_id},
            "view": {**view, "id": view_id, "type": "home", "team_id": TEAM_ID, "app_id": APP_ID, "bot_id": BOT_ID},
            "state": {"values": {}},
            "actions": [{**action, "action_ts": f"{time.time():.6f}"}],
        }
        return await self.post_interaction(payload)

    async def view_submitted(self, modal: Modal, values: dict[str, Any]) -> BotAnswer:
        return await self.post_interaction(view_submission(modal, values))

    async def view_closed(self, modal: Modal) -> BotAnswer | None:
        if not modal.view.get("notify_on_close"):
            return None
        return await self.post_interaction(
            {**_envelope("view_closed", modal.user), "view": _view_of(modal, {}), "is_cleared": False}
        )

    # --- signed requests --------------------------------------------------------------------
    async def post_event(self, event: dict[str, Any]) -> BotAnswer:
        body = {
            "token": "playground",
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": "Ev" + uuid.uuid4().hex[:16].upper(),
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        }
        return await self._post(json.dumps(body), "application/json")

    async def post_interaction(self, payload: dict[str, Any]) -> BotAnswer:
        return await self._post(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    async def _post(self, body: str, content_type: str) -> BotAnswer:
        timestamp = str(int(time.time()))
        headers = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": self.verifier.generate_signature(timestamp=timestamp, body=body),
        }
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        async with self._session.post(self.events_url, data=body.encode(), headers=headers) as response:
            return BotAnswer(response.status, await response.text())


# --- the payloads, as Slack writes them ------------------------------------------------------
def message_event(workspace: Workspace, message: Message) -> dict[str, Any]:
    event = {
        "type": "message",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "channel": message.channel,
        "channel_type": "im" if workspace.channels[message.channel].is_im else "channel",
        "team": TEAM_ID,
    }
    if message.thread_ts:
        event["thread_ts"] = message.thread_ts
    return event


def app_mention_event(message: Message) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "channel": message.channel,
        "team": TEAM_ID,
    }
    if message.thread_ts:
        event["thread_ts"] = message.thread_ts
    return event


def block_actions(workspace: Workspace, user_id: str, message: Message, action: dict[str, Any]) -> dict[str, Any]:
    """A click on `action` (a button or a select, with `block_id`) in `message`; a fresh trigger_id lets
    the bot open a modal for the person who clicked."""
    channel = workspace.channels[message.channel]
    return {
        **_envelope("block_actions", user_id),
        "trigger_id": workspace.new_trigger(user_id),
        "container": {
            "type": "message",
            "message_ts": message.ts,
            "channel_id": message.channel,
            "is_ephemeral": message.ephemeral_to is not None,
            **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
        },
        "channel": {"id": channel.id, "name": channel.name if not channel.is_im else "directmessage"},
        "message": {
            "type": "message",
            "ts": message.ts,
            "text": message.text,
            "blocks": message.blocks,
            "user": message.user,
            **({"bot_id": BOT_ID} if message.user == BOT_USER_ID else {}),
            **({"thread_ts": message.thread_ts} if message.thread_ts else {}),
        },
        "state": {"values": {}},
        "actions": [{**action, "action_ts": f"{time.time():.6f}"}],
    }


def view_submission(modal: Modal, values: dict[str, Any]) -> dict[str, Any]:
    return {
        **_envelope("view_submission", modal.user),
        "trigger_id": f"{int(time.time())}.{uuid.uuid4().hex[:16]}",
        "view": _view_of(modal, values),
        "response_urls": [],
    }


def _view_of(modal: Modal, values: dict[str, Any]) -> dict[str, Any]:
    return {
        **modal.view,
        "id": modal.id,
        "team_id": TEAM_ID,
        "app_id": APP_ID,
        "bot_id": BOT_ID,
        "private_metadata": modal.view.get("private_metadata", ""),
        "callback_id": modal.view.get("callback_id", ""),
        "state": {"values": values},
        "hash": uuid.uuid4().hex[:16],
    }


def _envelope(kind: str, user_id: str) -> dict[str, Any]:
    return {
        "type": kind,
        "team": {"id": TEAM_ID, "domain": "playground"},
        "user": {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "playground",
        "is_enterprise_install": False,
    }
