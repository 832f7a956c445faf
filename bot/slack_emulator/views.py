"""The view methods of the Web API: modals (open, push, update) and the App Home (publish), with the
rules of Slack's views the bot relies on."""

from __future__ import annotations

from typing import Any

from .checks import (
    BUTTON_TEXT_LIMIT,
    ID_LIMIT,
    VALUE_LIMIT,
    Answer,
    ApiMethods,
    SlackError,
    plain_text_ok,
    required,
    short_text,
)
from .limits import section_text_ok
from .workspace import APP_ID, BOT_ID, MODAL_STACK_LIMIT, TEAM_ID


class ViewMethods(ApiMethods):
    def views_open(self, p: dict[str, Any], *, push: bool = False) -> Answer:
        user, error = self.workspace.use_trigger(p.get("trigger_id"))
        if user is None:
            raise SlackError(error or "invalid_trigger_id")
        view = view_of(p, "modal")
        if push and len(self.workspace.modals.get(user, [])) >= MODAL_STACK_LIMIT:
            raise SlackError("push_limit_reached")
        modal = self.workspace.open_modal(user, view, push=push)
        return {"ok": True, "view": view_json(modal.id, modal.view, modal.hash)}

    def views_push(self, p: dict[str, Any]) -> Answer:
        return self.views_open(p, push=True)

    def views_update(self, p: dict[str, Any]) -> Answer:
        if not p.get("view_id") and not p.get("external_id"):
            raise SlackError("invalid_arguments")
        modal = self.workspace.find_modal(p.get("view_id"), p.get("external_id"))
        if modal is None:
            raise SlackError("not_found")
        view = view_of(p, "modal")
        if p.get("hash") and p["hash"] != modal.hash:
            raise SlackError("hash_conflict")
        self.workspace.update_modal(modal, view)
        return {"ok": True, "view": view_json(modal.id, modal.view, modal.hash)}

    def views_publish(self, p: dict[str, Any]) -> Answer:
        user = required(p, "user_id")
        if user not in self.workspace.people:
            raise SlackError("user_not_found")
        view = view_of(p, "home")
        if not view_blocks_ok(view.get("blocks")):
            raise SlackError("invalid_blocks")
        self.workspace.home_views[user] = view
        self.workspace.changed()
        return {"ok": True, "view": view_json("VHOME" + user, view, "")}


def view_json(view_id: str, view: dict[str, Any], view_hash: str) -> dict[str, Any]:
    """A view as the Web API returns it."""
    return {
        **view,
        "id": view_id,
        "team_id": TEAM_ID,
        "app_id": APP_ID,
        "bot_id": BOT_ID,
        "hash": view_hash,
        "state": {"values": {}},
    }


VIEW_BLOCK_LIMIT = 100
CHECKBOX_OPTIONS_LIMIT = 10
OPTION_VALUE_LIMIT = 150


def view_blocks_ok(blocks: Any) -> bool:
    """Slack's rules for a view's blocks that the bot's Home relies on: at most 100 typed blocks, each
    block_id at most 255 characters and unique in the view, action_ids unique in their block; a button's
    text at most 75 characters and its value at most 2000; a checkboxes element has 1-10 options, each
    with a text of at most 75 characters and a value of at most 150, unique in the element."""
    if not isinstance(blocks, list) or len(blocks) > VIEW_BLOCK_LIMIT:
        return False
    block_ids = [b.get("block_id") for b in blocks if isinstance(b, dict) and b.get("block_id") is not None]
    if len(block_ids) != len(set(block_ids)) or not all(short_text(b, ID_LIMIT) for b in block_ids):
        return False
    for block in blocks:
        if not isinstance(block, dict) or not block.get("type"):
            return False
        elements = list(block.get("elements") or []) if block["type"] == "actions" else []
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        action_ids = [e.get("action_id") for e in elements if isinstance(e, dict) and e.get("action_id")]
        if len(action_ids) != len(set(action_ids)):
            return False
        if not all(isinstance(e, dict) and _element_ok(e) for e in elements):
            return False
    return True


def _element_ok(element: dict[str, Any]) -> bool:
    if not short_text(element.get("action_id"), ID_LIMIT, optional=True):
        return False
    if element.get("type") == "button":
        return plain_text_ok(element.get("text")) and short_text(element.get("value"), VALUE_LIMIT, optional=True)
    if element.get("type") == "checkboxes":
        options = element.get("options")
        if not isinstance(options, list) or not 1 <= len(options) <= CHECKBOX_OPTIONS_LIMIT:
            return False
        values = [o.get("value") for o in options if isinstance(o, dict)]
        if len(values) != len(options) or len(set(values)) != len(values):
            return False
        for option in options:
            text = option.get("text")
            if not (isinstance(text, dict) and text.get("type") in ("plain_text", "mrkdwn")):
                return False
            if not short_text(text.get("text"), BUTTON_TEXT_LIMIT) or not short_text(
                option.get("value"), OPTION_VALUE_LIMIT
            ):
                return False
        chosen = element.get("initial_options") or []
        return isinstance(chosen, list) and all(o in options for o in chosen)
    return True


def view_of(p: dict[str, Any], kind: str) -> dict[str, Any]:
    view = p.get("view")
    if not isinstance(view, dict) or view.get("type") != kind:
        raise SlackError("invalid_arguments")
    blocks = view.get("blocks")
    if isinstance(blocks, list) and (
        len(blocks) > VIEW_BLOCK_LIMIT or not all(isinstance(b, dict) and section_text_ok(b) for b in blocks)
    ):
        raise SlackError("invalid_blocks")  # Slack: "must be less than 3001 characters", "no more than 100 items"
    return view
