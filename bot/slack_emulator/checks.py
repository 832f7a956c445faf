"""What the Web API's methods share: Slack's refusal (`SlackError`), the arguments every method checks
the same way (a channel, a message, required text, blocks, a page), and the base of the method groups."""

from __future__ import annotations

from typing import Any

from .limits import MESSAGE_BLOCK_LIMIT, section_text_ok
from .workspace import BOT_USER_ID, Message, Workspace, with_block_ids

Answer = dict[str, Any]
MAX_TEXT = 40_000
"""Slack truncates text past 40,000 characters and refuses much longer (`msg_too_long`)."""


class SlackError(Exception):
    """A call Slack refuses: answered `{"ok": false, "error": error}`."""

    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


class ApiMethods:
    """The base of each group of Web API methods (`SlackWebApi` is all of them): the workspace they answer
    from, and the checks of a channel and a message they share."""

    workspace: Workspace
    streaming: bool

    def _channel(self, p: dict[str, Any], *, member: bool = True) -> str:
        """The id of the channel `p` names (a person's id names their DM), which must exist and, with
        `member`, have the bot in it."""
        channel_id = self.workspace.channel_id(p.get("channel"))
        channel = self.workspace.channels.get(channel_id)
        if channel is None:
            raise SlackError("channel_not_found")
        if member and not channel.visible_to(BOT_USER_ID):
            raise SlackError("not_in_channel")
        return channel_id

    def _message(self, channel: str, p: dict[str, Any]) -> Message:
        message = self.workspace.message(channel, str(p.get("ts") or ""))
        if message is None or message.ephemeral_to is not None:
            raise SlackError("message_not_found")
        return message

    def _streaming_message(self, p: dict[str, Any]) -> Message:
        message = self._message(self._channel(p), p)
        if not message.streaming:
            raise SlackError("message_not_in_streaming_state")
        return message


def required(p: dict[str, Any], name: str) -> str:
    value = p.get(name)
    if value is None or str(value) == "":
        raise SlackError("invalid_arguments")
    return str(value)


def content(p: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A new message's text and blocks: one of text, blocks or attachments is needed (`no_text`)."""
    text = str(p.get("text") or "")
    blocks = blocks_of(p.get("blocks"))
    if not text and not blocks and not p.get("attachments"):
        raise SlackError("no_text")
    if len(text) > MAX_TEXT:
        raise SlackError("msg_too_long")
    return text, blocks


def blocks_of(blocks: Any) -> list[dict[str, Any]]:
    """Blocks as sent, each with a block_id; anything but a list of typed blocks is `invalid_blocks`, and
    so is a `context_actions` block that breaks Slack's documented rules (`check_context_actions`)."""
    if blocks is None or blocks == "":
        return []
    if not isinstance(blocks, list) or not all(isinstance(b, dict) and b.get("type") for b in blocks):
        raise SlackError("invalid_blocks")
    if len(blocks) > MESSAGE_BLOCK_LIMIT or not all(section_text_ok(b) for b in blocks):
        raise SlackError("invalid_blocks")
    for block in blocks:
        if block["type"] == "context_actions" and not context_actions_ok(block):
            raise SlackError("invalid_blocks")
    return with_block_ids(blocks)


CONTEXT_ACTIONS_ELEMENTS = ("feedback_buttons", "icon_button")
CONTEXT_ACTIONS_LIMIT = 5
ID_LIMIT = 255
BUTTON_TEXT_LIMIT = 75
VALUE_LIMIT = 2000


def context_actions_ok(block: dict[str, Any]) -> bool:
    """Slack's context actions block: `elements` a list of 1-5 `feedback_buttons` or `icon_button`
    elements, `block_id` at most 255 characters; a feedback_buttons element has a `positive_button` and a
    `negative_button`, each `{text: plain_text (at most 75), value (at most 2000), accessibility_label?
    (at most 75)}`, and an optional `action_id` of at most 255 characters, unique in the block."""
    elements = block.get("elements")
    if not isinstance(elements, list) or not 1 <= len(elements) <= CONTEXT_ACTIONS_LIMIT:
        return False
    if not short_text(block.get("block_id"), ID_LIMIT, optional=True):
        return False
    action_ids = [e.get("action_id") for e in elements if isinstance(e, dict) and e.get("action_id")]
    if len(action_ids) != len(set(action_ids)):
        return False
    for element in elements:
        if not isinstance(element, dict) or element.get("type") not in CONTEXT_ACTIONS_ELEMENTS:
            return False
        if not short_text(element.get("action_id"), ID_LIMIT, optional=True):
            return False
        if element["type"] == "feedback_buttons":
            if set(element) - {"type", "action_id", "positive_button", "negative_button"}:
                return False
            if not all(feedback_button_ok(element.get(k)) for k in ("positive_button", "negative_button")):
                return False
        elif not (isinstance(element.get("icon"), str) and plain_text_ok(element.get("text"))):
            return False
    return True


def feedback_button_ok(button: Any) -> bool:
    if not isinstance(button, dict) or set(button) - {"text", "value", "accessibility_label"}:
        return False
    return (
        plain_text_ok(button.get("text"))
        and short_text(button.get("value"), VALUE_LIMIT)
        and short_text(button.get("accessibility_label"), BUTTON_TEXT_LIMIT, optional=True)
    )


def plain_text_ok(text: Any) -> bool:
    return (
        isinstance(text, dict)
        and text.get("type") == "plain_text"
        and short_text(text.get("text"), BUTTON_TEXT_LIMIT)
        and isinstance(text.get("emoji", True), bool)
    )


def short_text(value: Any, limit: int, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, str) and 0 < len(value) <= limit


def page_of(messages: list[dict[str, Any]], p: dict[str, Any]) -> Answer:
    """One page of messages (`limit`, `cursor`), with Slack's `has_more` and `next_cursor`."""
    try:
        limit = max(1, min(int(p.get("limit") or 100), 1000))
        start = int(p.get("cursor") or 0)
    except ValueError:
        raise SlackError("invalid_cursor") from None
    page = messages[start : start + limit]
    more = start + limit < len(messages)
    return {
        "ok": True,
        "messages": page,
        "has_more": more,
        "response_metadata": {"next_cursor": str(start + limit) if more else ""},
    }
