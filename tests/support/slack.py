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

import asyncio
import itertools
import uuid
from typing import Any

import aiohttp
from slack_sdk.signature import SignatureVerifier

from bot.slack.approval_builder import ACTIONS_BLOCK_ID
from bot.slack_emulator import (
    BOT_ID,
    BOT_USER_ID,
    TEAM_ID,
    Channel,
    Message,
    Modal,
    Person,
    SlackEmulator,
    UserGroup,
    Workspace,
)
from bot.slack_emulator.app_requests import (
    BotAnswer,
    action_of,
    app_mention_event,
    block_actions,
    event_body,
    interaction_body,
    message_event,
    post_signed,
    stale_button,
    view_submission,
)
from bot.slack_emulator.faults import Fault

__all__ = ["BOT_ID", "BOT_USER_ID", "TEAM_ID", "SignedSender", "hang", "hanging", "slack_workspace"]

PEOPLE = ("U1", "U2", "U3", "U7", "U9")
READERS = {
    "UTW": "zh-TW",
    "UHK": "zh-HK",
    "UCN": "zh-CN",
    "UKO": "ko-KR",
    "UJA": "ja-JP",
    "UFR": "fr-FR",
    "UNONE": None,
}
"""People who read another language than the English of PEOPLE (en-US): their Slack locale (UNONE has none)."""


def hang(slack: SlackEmulator, method: str, seconds: float = 6.0) -> Fault:
    """The next call of `method` gets no answer for `seconds`, then its connection is closed with nothing
    done: long enough for a test to kill the bot meanwhile, short enough not to hold up the end. The
    fault's `times` is 0 once that call came (see `hanging`)."""
    fault = Fault(method=method, delay=seconds, drop=True, after=False)
    slack.faults.add(fault)
    return fault


async def hanging(fault: Fault, timeout: float = 30.0) -> None:
    """Wait until the call `hang` holds has come: the bot is waiting for Slack's answer now."""
    deadline = asyncio.get_running_loop().time() + timeout
    while fault.times > 0:
        assert asyncio.get_running_loop().time() < deadline, f"{fault.method} was never called"
        await asyncio.sleep(0.02)


def slack_workspace() -> Workspace:
    """The team the tests talk in: people U1, U2, U3, U7, U9 (U1 an admin; Slack locale en-US) and the
    `READERS` of other languages, public channels C1 and C2, a private channel CPRIVATE the bot is not in,
    the DM D1 between U1 and the bot, and the user group S1 (U1, U2)."""
    people = [
        Person(id=user, name=user.lower(), real_name=f"User {user}", is_admin=user == "U1", locale="en-US")
        for user in PEOPLE
    ]
    people += [
        Person(id=user, name=user.lower(), real_name=f"User {user}", locale=loc) for user, loc in READERS.items()
    ]
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
    """Posts signed requests to a Bolt app's events URL, as Slack does (the payloads are
    `bot.slack_emulator.app_requests`', the ones the playground sends)."""

    def __init__(self, url: str, signing_secret: str, *, slack: SlackEmulator | None = None):
        self.url = url
        self.verifier = SignatureVerifier(signing_secret)
        self.slack = slack
        self._ts = itertools.count(1)

    async def post(
        self, body: str, *, content_type: str, headers: dict[str, str] | None = None, signature: str | None = None
    ) -> BotAnswer:
        async with aiohttp.ClientSession() as session:
            return await post_signed(
                session, self.url, self.verifier, body, content_type=content_type, headers=headers, signature=signature
            )

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
    ) -> BotAnswer:
        """An Events API delivery of `event` (Slack's retries carry the same `event_id` and X-Slack-Retry-Num)."""
        self._record(event)
        headers = {"X-Slack-Retry-Num": str(retry_num), "X-Slack-Retry-Reason": "http_timeout"} if retry_num else {}
        return await self.post(event_body(event, event_id=event_id), content_type="application/json", headers=headers)

    def mention(
        self, text: str, *, user: str = "U1", channel: str = "C1", ts: str | None = None, thread_ts: str | None = None
    ) -> dict[str, Any]:
        """An `app_mention` event: `<@bot> text` in a channel."""
        return app_mention_event(self._message(f"<@{BOT_USER_ID}> {text}", user, channel, ts, thread_ts))

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
        """A `message` event (`extra`: fields such as `subtype` or `bot_id`)."""
        return {**message_event(self._message(text, user, channel, ts, thread_ts), channel_type=channel_type), **extra}

    def _message(self, text: str, user: str, channel: str, ts: str | None, thread_ts: str | None) -> Message:
        return Message(channel=channel, ts=ts or self.new_ts(), user=user, text=text, thread_ts=thread_ts)

    # --- interactivity ----------------------------------------------------------------------
    async def interaction(self, payload: dict[str, Any]) -> BotAnswer:
        return await self.post(interaction_body(payload), content_type="application/x-www-form-urlencoded")

    async def click(
        self,
        message: Message,
        action_id: str,
        *,
        user: str = "U1",
        value: str | None = None,
        trigger_id: str | None = None,
    ) -> BotAnswer:
        """A block_actions payload for a click on `message`'s button `action_id` (`value` forges another, or
        clicks a button the message no longer shows, as a stale client can; for feedback buttons, the value
        of the one clicked). `trigger_id`: the click's (`trigger_for`), to find the modal it opens."""
        action = action_of(message, action_id)
        if action is None and value is not None:
            action = action_of(message, action_id, value=value)  # a feedback button, by its value
        if value is not None and (action is None or action.get("type") == "button"):
            action = {**(action or stale_button(action_id, ACTIONS_BLOCK_ID, value)), "value": value}
        assert action is not None, f"the message has no button {action_id}"
        payload = block_actions(
            user,
            message,
            action,
            channel=self._channel(message.channel),
            trigger_id=trigger_id or self.trigger_for(user),
        )
        return await self.interaction(payload)

    async def submit(self, view: dict[str, Any], values: dict[str, dict[str, Any]], *, user: str = "U1") -> BotAnswer:
        """A view_submission of `view` (as opened) with `values` (block_id -> {action_id: value})."""
        modal = Modal(id=view.get("id") or "V" + uuid.uuid4().hex[:10].upper(), user=user, view=view)
        return await self.interaction(view_submission(modal, values, trigger_id=self.trigger_for(user)))

    def _channel(self, channel_id: str) -> Channel:
        if self.slack is not None and channel_id in self.slack.workspace.channels:
            return self.slack.workspace.channels[channel_id]
        return Channel(id=channel_id, name=channel_id.lower())
