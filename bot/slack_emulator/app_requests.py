"""What Slack sends an app at its Request URL, as Slack writes it: Events API deliveries, block_actions,
view_submission and view_closed payloads, signed with the app's signing secret (`X-Slack-Signature` v0).

The playground delivers what a person does to the bot with these, and the tests drive a bot with them,
so both speak the same Slack. (The emulated Web API is the other direction: what the app sends Slack.)
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any, NamedTuple
from urllib.parse import urlencode

import aiohttp
from slack_sdk.signature import SignatureVerifier

from .workspace import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID, TEAM_NAME, Channel, Message, Modal

VERIFICATION_TOKEN = "verification-token-unused"
"""Slack still sends the legacy verification token; Bolt checks the signature instead."""


class BotAnswer(NamedTuple):
    """The app's HTTP answer to one request."""

    status: int
    body: str

    def json(self) -> dict[str, Any]:
        """The answer's JSON object (a view_submission's `response_action`), or {} when it has none."""
        try:
            value = json.loads(self.body) if self.body.strip() else {}
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


async def post_signed(
    session: aiohttp.ClientSession,
    url: str,
    verifier: SignatureVerifier,
    body: str,
    *,
    content_type: str,
    headers: dict[str, str] | None = None,
    signature: str | None = None,
) -> BotAnswer:
    """POST `body` to the app's Request URL as Slack does: timestamped and signed (`signature` forges
    another); `headers` add to Slack's or replace them."""
    timestamp = str(int(time.time()))
    all_headers: dict[str, str] = {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature or str(verifier.generate_signature(timestamp=timestamp, body=body)),
        **(headers or {}),
    }
    async with session.post(url, data=body.encode(), headers=all_headers) as response:
        return BotAnswer(response.status, await response.text())


# --- the bodies ------------------------------------------------------------------------------
def event_body(event: dict[str, Any], *, event_id: str | None = None) -> str:
    """An Events API delivery of `event` (Slack's retries of one carry the same `event_id`)."""
    return json.dumps(event_callback(event, event_id=event_id))


def event_callback(event: dict[str, Any], *, event_id: str | None = None) -> dict[str, Any]:
    return {
        "token": VERIFICATION_TOKEN,
        "team_id": TEAM_ID,
        "api_app_id": APP_ID,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or "Ev" + uuid.uuid4().hex[:16].upper(),
        "event_time": int(time.time()),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def interaction_body(payload: dict[str, Any]) -> str:
    """An interactivity request: the payload as the form field `payload`."""
    return urlencode({"payload": json.dumps(payload)})


# --- events ----------------------------------------------------------------------------------
def message_event(message: Message, *, channel_type: str = "channel") -> dict[str, Any]:
    """The `message` event of a person's message (`channel_type` `im` in a DM)."""
    return {"type": "message", **_message_fields(message), "channel_type": channel_type}


def app_mention_event(message: Message) -> dict[str, Any]:
    """The `app_mention` event of a message that mentions the bot outside a DM."""
    return {"type": "app_mention", **_message_fields(message)}


def app_home_opened_event(user_id: str, tab: str = "home") -> dict[str, Any]:
    """The person opened the bot's Home tab (`home`) or its DM (`messages`: the agent view's conversation)."""
    return {"type": "app_home_opened", "user": user_id, "channel": "D" + user_id, "tab": tab, "event_ts": _now()}


def _message_fields(message: Message) -> dict[str, Any]:
    fields = {
        "user": message.user,
        "text": message.text,
        "ts": message.ts,
        "event_ts": message.ts,
        "channel": message.channel,
        "team": TEAM_ID,
    }
    if message.thread_ts:
        fields["thread_ts"] = message.thread_ts
    return fields


# --- interactivity ---------------------------------------------------------------------------
def block_actions(
    user_id: str, message: Message, action: dict[str, Any], *, channel: Channel, trigger_id: str
) -> dict[str, Any]:
    """A click on `action` (from `action_of`) in `message`, posted in `channel`; `trigger_id` lets the app
    open a modal for the person who clicked."""
    return {
        **_envelope("block_actions", user_id),
        "trigger_id": trigger_id,
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
        "actions": [{**action, "action_ts": _now()}],
    }


def home_block_actions(
    user_id: str,
    view: dict[str, Any],
    action: dict[str, Any],
    *,
    trigger_id: str,
    values: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A click on a button of the person's App Home: a block_actions from a view, with no channel.
    `values` is the view's input state (block_id -> {action_id: state}, e.g. from `checkbox_state`), which
    Slack sends in `view.state`."""
    view_id = "VHOME" + user_id
    return {
        **_envelope("block_actions", user_id),
        "trigger_id": trigger_id,
        "container": {"type": "view", "view_id": view_id},
        "view": {
            **view,
            "id": view_id,
            "type": "home",
            "team_id": TEAM_ID,
            "app_id": APP_ID,
            "bot_id": BOT_ID,
            "state": {"values": values or {}},
        },
        "state": {"values": {}},
        "actions": [{**action, "action_ts": _now()}],
    }


def view_submission(modal: Modal, values: dict[str, Any], *, trigger_id: str) -> dict[str, Any]:
    """The submission of `modal` with `values` (block_id -> {action_id: value})."""
    return {
        **_envelope("view_submission", modal.user),
        "trigger_id": trigger_id,
        "view": _view_of(modal, values),
        "response_urls": [],
    }


def view_closed(modal: Modal) -> dict[str, Any]:
    """The person closed `modal` (sent only for a view with `notify_on_close`)."""
    return {**_envelope("view_closed", modal.user), "view": _view_of(modal, {}), "is_cleared": False}


def action_of(message: Message, action_id: str, block_id: Any = None, value: Any = None) -> dict[str, Any] | None:
    """The `actions[0]` of a block_actions payload for the element `action_id` of `message` (a button, a
    select whose chosen option's value is `value`, or the feedback button whose value is `value`); None if
    the message has no such element."""
    for block in message.blocks:
        if block_id and block.get("block_id") != block_id:
            continue
        elements = list(block.get("elements") or []) if block.get("type") in ("actions", "context_actions") else []
        if block.get("type") == "section" and isinstance(block.get("accessory"), dict):
            elements.append(block["accessory"])
        for element in elements:
            if element.get("action_id") != action_id:
                continue
            action = {"type": element.get("type"), "action_id": action_id, "block_id": block.get("block_id", "")}
            if element.get("type") == "feedback_buttons":
                # Slack sends the value (and text) of the one button clicked
                buttons = [element.get("positive_button") or {}, element.get("negative_button") or {}]
                clicked = next((b for b in buttons if b.get("value") == value), None)
                return {**action, "value": value, "text": clicked.get("text")} if clicked else None
            if element.get("type") == "button":
                action.update(value=element.get("value"), text=element.get("text"))
                if element.get("style"):
                    action["style"] = element["style"]
                return action
            options = [o for group in element.get("option_groups") or [] for o in group.get("options", [])]
            options += element.get("options") or []
            chosen = next((o for o in options if o.get("value") == value), None)
            return {**action, "selected_option": chosen} if chosen else None
    return None


def checkbox_state(view: dict[str, Any], action_id: str, chosen: list[str]) -> dict[str, Any]:
    """The view state after the person ticked the options whose values are `chosen` among the checkboxes
    `action_id` of `view` (as Slack keeps it: per block, only the options of that element). A value no
    checkbox of the view offers raises `ValueError`: the person cannot tick it."""
    values: dict[str, Any] = {}
    found: set[str] = set()
    for block in view.get("blocks") or []:
        elements = list(block.get("elements") or []) if block.get("type") in ("actions", "input") else []
        if block.get("type") == "input" and isinstance(block.get("element"), dict):
            elements.append(block["element"])
        if isinstance(block.get("accessory"), dict):
            elements.append(block["accessory"])
        for element in elements:
            if element.get("type") != "checkboxes" or element.get("action_id") != action_id:
                continue
            ticked = [o for o in element.get("options") or [] if o.get("value") in chosen]
            found.update(o["value"] for o in ticked)
            values.setdefault(block["block_id"], {})[action_id] = {"type": "checkboxes", "selected_options": ticked}
    missing = [value for value in chosen if value not in found]
    if missing:
        raise ValueError(f"no checkbox {action_id!r} in the view offers {missing}")
    return values


def stale_button(action_id: str, block_id: Any, value: Any) -> dict[str, Any]:
    """The action of a click on a button the person's client still showed after the message changed
    (Slack delivers it too)."""
    return {"type": "button", "action_id": action_id, "block_id": str(block_id or ""), "value": str(value)}


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
        "team": {"id": TEAM_ID, "domain": TEAM_NAME.lower()},
        "user": {"id": user_id, "username": user_id.lower(), "name": user_id.lower(), "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": VERIFICATION_TOKEN,
        "is_enterprise_install": False,
    }


def _now() -> str:
    return f"{time.time():.6f}"
