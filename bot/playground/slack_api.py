"""The Slack Web API methods the bot calls, answered from the in-memory workspace.

Mounted at `/api/{method}`, so the bot's `AsyncWebClient(base_url="http://127.0.0.1:<port>/api/")`
talks to it exactly as it talks to slack.com: form or JSON bodies, a bearer token, `{"ok": ...}` answers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web

from .workspace import APP_ID, BOT_ID, BOT_USER_ID, TEAM_ID, TEAM_NAME, Workspace, with_block_ids, with_ids

log = logging.getLogger(__name__)

_JSON_FIELDS = ("blocks", "view", "chunks", "metadata", "attachments")
Answer = dict[str, Any]


def add_slack_api_routes(web_app: web.Application, workspace: Workspace, *, token: str) -> None:
    """Answer `POST /api/{method}` (and GET, as the SDK allows for some methods) from `workspace`."""
    api = SlackApi(workspace, token=token)
    web_app.router.add_route("*", "/api/{method:[a-zA-Z]+(\\.[a-zA-Z]+)+}", api.handle)


class SlackApi:
    def __init__(self, workspace: Workspace, *, token: str):
        self.workspace = workspace
        self.token = token
        self.methods: dict[str, Callable[[dict[str, Any]], Answer]] = {
            "auth.test": self.auth_test,
            "chat.postMessage": self.chat_post_message,
            "chat.update": self.chat_update,
            "chat.delete": self.chat_delete,
            "chat.postEphemeral": self.chat_post_ephemeral,
            "chat.startStream": self.chat_start_stream,
            "chat.appendStream": self.chat_append_stream,
            "chat.stopStream": self.chat_stop_stream,
            "assistant.threads.setStatus": self.set_status,
            "views.open": self.views_open,
            "views.push": self.views_push,
            "views.update": self.views_update,
            "views.publish": self.views_publish,
            "users.info": self.users_info,
            "conversations.info": self.conversations_info,
            "conversations.replies": self.conversations_replies,
            "conversations.history": self.conversations_history,
        }

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or params.get("token")
        if given != self.token:
            return web.json_response({"ok": False, "error": "invalid_auth"})
        handler = self.methods.get(method)
        if handler is None:
            log.warning("the bot called %s, which the playground does not emulate", method)
            return web.json_response({"ok": False, "error": "unknown_method"})
        return web.json_response(handler(params))

    # --- auth and directory -----------------------------------------------------------------
    def auth_test(self, p: dict[str, Any]) -> Answer:
        return {
            "ok": True,
            "url": "http://playground.local/",
            "team": TEAM_NAME,
            "user": "demo-agent",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "is_enterprise_install": False,
        }

    def users_info(self, p: dict[str, Any]) -> Answer:
        person = self.workspace.people.get(str(p.get("user")))
        if person is None:
            return {"ok": False, "error": "user_not_found"}
        return {
            "ok": True,
            "user": {
                "id": person.id,
                "team_id": TEAM_ID,
                "name": person.name,
                "real_name": person.real_name,
                "is_bot": person.is_bot,
                "is_admin": False,
                "tz": "UTC",
                "profile": {"real_name": person.real_name, "display_name": person.real_name},
            },
        }

    def conversations_info(self, p: dict[str, Any]) -> Answer:
        channel = self.workspace.channels.get(self._channel_id(p.get("channel")))
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        info: dict[str, Any] = {"id": channel.id, "name": channel.name, "is_im": channel.is_im}
        info.update({"is_channel": not channel.is_im, "is_member": True, "is_private": channel.is_im})
        if channel.is_im:
            info["user"] = next(m for m in channel.members if m != BOT_USER_ID)
        return {"ok": True, "channel": info}

    def conversations_replies(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        messages = self.workspace.thread(channel, str(p.get("ts")))
        if not messages:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": [_as_slack(m.to_json()) for m in messages], "has_more": False}

    def conversations_history(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        top = [m for m in self.workspace.messages.values() if m.channel == channel and m.thread_ts in (None, m.ts)]
        top = [m for m in top if m.ephemeral_to is None]
        top.sort(key=lambda m: float(m.ts), reverse=True)
        return {"ok": True, "messages": [_as_slack(m.to_json()) for m in top], "has_more": False}

    # --- messages ---------------------------------------------------------------------------
    def chat_post_message(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        if channel not in self.workspace.channels:
            return {"ok": False, "error": "channel_not_found"}
        if not p.get("text") and not p.get("blocks"):
            return {"ok": False, "error": "no_text"}
        message = self.workspace.post(
            channel, BOT_USER_ID, str(p.get("text") or ""), blocks=_list(p.get("blocks")), thread_ts=p.get("thread_ts")
        )
        return {"ok": True, "channel": channel, "ts": message.ts, "message": _as_slack(message.to_json())}

    def chat_update(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        message = self.workspace.message(channel, str(p.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.user != BOT_USER_ID:
            return {"ok": False, "error": "cant_update_message"}
        if p.get("text") is not None:
            message.text = str(p["text"])
        if "blocks" in p:
            message.blocks = _list(p.get("blocks"))
        message.format = "mrkdwn"
        message.edited = True
        self.workspace.changed()
        return {"ok": True, "channel": channel, "ts": message.ts, "text": message.text}

    def chat_delete(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        if self.workspace.messages.pop((channel, str(p.get("ts"))), None) is None:
            return {"ok": False, "error": "message_not_found"}
        self.workspace.changed()
        return {"ok": True, "channel": channel, "ts": p.get("ts")}

    def chat_post_ephemeral(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        user = str(p.get("user") or "")
        if channel not in self.workspace.channels:
            return {"ok": False, "error": "channel_not_found"}
        if user not in self.workspace.people:
            return {"ok": False, "error": "user_not_found"}
        message = self.workspace.post(
            channel,
            BOT_USER_ID,
            str(p.get("text") or ""),
            blocks=_list(p.get("blocks")),
            thread_ts=p.get("thread_ts"),
            ephemeral_to=user,
        )
        return {"ok": True, "message_ts": message.ts}

    # --- streamed answers -------------------------------------------------------------------
    def chat_start_stream(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel"))
        if channel not in self.workspace.channels:
            return {"ok": False, "error": "channel_not_found"}
        if not p.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        message = self.workspace.post(
            channel, BOT_USER_ID, _stream_text(p), thread_ts=p["thread_ts"], format="markdown", streaming=True
        )
        return {"ok": True, "channel": channel, "ts": message.ts}

    def chat_append_stream(self, p: dict[str, Any]) -> Answer:
        message = self.workspace.message(self._channel_id(p.get("channel")), str(p.get("ts")))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message.text += _stream_text(p)
        self.workspace.changed()
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    def chat_stop_stream(self, p: dict[str, Any]) -> Answer:
        message = self.workspace.message(self._channel_id(p.get("channel")), str(p.get("ts")))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message.text += _stream_text(p)
        message.streaming = False
        if p.get("blocks"):
            message.blocks = _list(p["blocks"])
        self.workspace.changed()
        return {"ok": True, "channel": message.channel, "ts": message.ts, "message": _as_slack(message.to_json())}

    def set_status(self, p: dict[str, Any]) -> Answer:
        channel = self._channel_id(p.get("channel_id"))
        if channel not in self.workspace.channels or not p.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments"}
        self.workspace.set_status(channel, str(p["thread_ts"]), str(p.get("status") or ""))
        return {"ok": True}

    # --- modals and the App Home --------------------------------------------------------------
    def views_open(self, p: dict[str, Any], *, push: bool = False) -> Answer:
        user = self.workspace.use_trigger(p.get("trigger_id"))
        if user is None:
            return {"ok": False, "error": "invalid_trigger_id"}
        view = p.get("view")
        if not isinstance(view, dict) or view.get("type") != "modal":
            return {"ok": False, "error": "invalid_arguments"}
        modal = self.workspace.open_modal(user, view, push=push)
        return {"ok": True, "view": _view_json(modal.id, modal.view)}

    def views_push(self, p: dict[str, Any]) -> Answer:
        return self.views_open(p, push=True)

    def views_update(self, p: dict[str, Any]) -> Answer:
        modal = self.workspace.find_modal(p.get("view_id"), p.get("external_id"))
        view = p.get("view")
        if modal is None:
            return {"ok": False, "error": "not_found"}
        if not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        modal.view, modal.errors = with_ids(view), {}
        self.workspace.changed()
        return {"ok": True, "view": _view_json(modal.id, modal.view)}

    def views_publish(self, p: dict[str, Any]) -> Answer:
        user = str(p.get("user_id") or "")
        view = p.get("view")
        if user not in self.workspace.people or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        self.workspace.home_views[user] = view
        self.workspace.changed()
        return {"ok": True, "view": _view_json("VHOME" + user, view)}

    # --- helpers ----------------------------------------------------------------------------
    def _channel_id(self, channel: Any) -> str:
        """A channel id; a person's id names their DM with the bot, as in Slack."""
        channel = str(channel or "")
        if channel in self.workspace.people:
            return f"D{channel}"
        return channel


def _view_json(view_id: str, view: dict[str, Any]) -> dict[str, Any]:
    return {**view, "id": view_id, "team_id": TEAM_ID, "app_id": APP_ID, "bot_id": BOT_ID, "state": {"values": {}}}


def _as_slack(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the Web API returns it (the playground's own keys left out)."""
    out = {key: message[key] for key in ("ts", "user", "text", "blocks", "thread_ts") if message.get(key) is not None}
    out["type"] = "message"
    if message.get("bot_id"):
        out["bot_id"] = message["bot_id"]
    return out


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        body = await request.json() if request.can_read_body else {}
        params = dict(body or {})
    else:
        params = dict(await request.post())
    params.update(request.query)
    for key in _JSON_FIELDS:
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except json.JSONDecodeError:
                pass
    return params


def _list(blocks: Any) -> list[dict[str, Any]]:
    """Blocks as sent (a list, or its JSON), each with a block_id."""
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return with_block_ids([block for block in blocks or [] if isinstance(block, dict)])


def _stream_text(p: dict[str, Any]) -> str:
    text = str(p.get("markdown_text") or "")
    for chunk in p.get("chunks") or []:
        if isinstance(chunk, dict) and chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
    return text
