"""What Slack would send the bot when a person acts in the playground: the payloads of
`bot.slack_emulator.app_requests` (Events API deliveries, block_actions, view_submission), signed with
the run's signing secret and posted to the bot's real Bolt app at `/slack/events`, so the Slack adapter
runs unchanged.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.signature import SignatureVerifier

from bot.slack_emulator import BOT_USER_ID, Message, Modal, Workspace
from bot.slack_emulator.app_requests import (
    BotAnswer,
    app_home_opened_event,
    app_mention_event,
    block_actions,
    event_body,
    home_block_actions,
    interaction_body,
    message_event,
    post_signed,
    view_closed,
    view_submission,
)


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
        in_dm = self.workspace.channels[message.channel].is_im
        answers = [await self.post_event(message_event(message, channel_type="im" if in_dm else "channel"))]
        if f"<@{BOT_USER_ID}>" in message.text and not in_dm:
            answers.append(await self.post_event(app_mention_event(message)))
        return answers

    async def button_clicked(self, user_id: str, message: Message, action: dict[str, Any]) -> BotAnswer:
        """A click on `action` in `message`; a fresh trigger_id lets the bot open a modal for the person."""
        channel = self.workspace.channels[message.channel]
        trigger_id = self.workspace.new_trigger(user_id)
        return await self.post_interaction(
            block_actions(user_id, message, action, channel=channel, trigger_id=trigger_id)
        )

    async def home_opened(self, user_id: str, tab: str = "home") -> BotAnswer:
        """The person opened the bot's App Home tab (`home`) or its DM (`messages`)."""
        return await self.post_event(app_home_opened_event(user_id, tab))

    async def home_clicked(
        self, user_id: str, view: dict[str, Any], action: dict[str, Any], *, values: dict[str, Any] | None = None
    ) -> BotAnswer:
        """A click on a button of the person's App Home; `values` is the view's state (ticked checkboxes)."""
        trigger_id = self.workspace.new_trigger(user_id)
        return await self.post_interaction(
            home_block_actions(user_id, view, action, trigger_id=trigger_id, values=values)
        )

    async def view_submitted(self, modal: Modal, values: dict[str, Any]) -> BotAnswer:
        trigger_id = self.workspace.new_trigger(modal.user)
        return await self.post_interaction(view_submission(modal, values, trigger_id=trigger_id))

    async def view_closed(self, modal: Modal) -> BotAnswer | None:
        if not modal.view.get("notify_on_close"):
            return None
        return await self.post_interaction(view_closed(modal))

    # --- signed requests --------------------------------------------------------------------
    async def post_event(self, event: dict[str, Any]) -> BotAnswer:
        return await self._post(event_body(event), "application/json")

    async def post_interaction(self, payload: dict[str, Any]) -> BotAnswer:
        return await self._post(interaction_body(payload), "application/x-www-form-urlencoded")

    async def _post(self, body: str, content_type: str) -> BotAnswer:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        return await post_signed(self._session, self.events_url, self.verifier, body, content_type=content_type)
