"""Slack's Web API, answered from a `Workspace` as strictly as Slack answers it.

Mounted at `/api/{method}`, so a bot's `AsyncWebClient(base_url="http://127.0.0.1:<port>/api/")` talks to
it exactly as it talks to slack.com: form-encoded or JSON bodies (or a query string), a bearer token (or a
`token` argument), `{"ok": ...}` answers with Slack's own error names. A method it does not emulate
answers `unknown_method`, as Slack does, so nothing passes against a method the real Slack would refuse.

Every call is recorded (`calls`), and a test can script faults (`faults`, see `faults.py`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .faults import Fault, Faults, Hold
from .limits import MESSAGE_BLOCK_LIMIT, section_text_ok
from .workspace import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    MODAL_STACK_LIMIT,
    TEAM_ID,
    TEAM_NAME,
    Message,
    Workspace,
    blocks_text,
    with_block_ids,
)

log = logging.getLogger(__name__)

Answer = dict[str, Any]
MAX_TEXT = 40_000
"""Slack truncates text past 40,000 characters and refuses much longer (`msg_too_long`)."""
_JSON_ARGUMENTS = ("blocks", "view", "chunks", "metadata", "attachments")
"""Arguments a form-encoded body carries as JSON strings."""


class SlackError(Exception):
    """A call Slack refuses: answered `{"ok": false, "error": error}`."""

    def __init__(self, error: str):
        super().__init__(error)
        self.error = error


@dataclass
class SlackCall:
    """One Web API call, as the emulation received and answered it."""

    method: str
    params: dict[str, Any]
    token: str | None
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.response.get("ok"))

    @property
    def text(self) -> str:
        """The call's visible text: `text`, `markdown_text`, streamed chunks and block texts, joined."""
        parts = [str(self.params.get(key) or "") for key in ("text", "markdown_text")]
        for chunk in self.params.get("chunks") or []:
            if isinstance(chunk, dict):
                parts.append(str(chunk.get("text") or ""))
        parts.append(blocks_text(self.params.get("blocks")))
        view = self.params.get("view")
        if isinstance(view, dict):
            parts.append(blocks_text(view.get("blocks")))
        return "\n".join(part for part in parts if part)


class SlackWebApi:
    """The Web API over one workspace. `token`: the only token accepted (None: any `xox…` or `xapp-…` token)."""

    def __init__(self, workspace: Workspace, *, token: str | None = None, streaming: bool = True):
        self.workspace = workspace
        self.token = token
        self.streaming = streaming
        """False: chat.startStream answers `unknown_method`, as where streaming is not available."""
        self.calls: list[SlackCall] = []
        """Every call answered by the method itself (ok or not), oldest first."""
        self.failed: list[tuple[str, int | str]] = []
        """(method, HTTP status | Slack error | "dropped") of each call a scripted fault answered."""
        self.faults = Faults()
        self._recorded = asyncio.Condition()
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
            "assistant.threads.setSuggestedPrompts": self.set_suggested_prompts,
            "views.open": self.views_open,
            "views.push": self.views_push,
            "views.update": self.views_update,
            "views.publish": self.views_publish,
            "users.info": self.users_info,
            "usergroups.users.list": self.usergroups_users_list,
            "conversations.info": self.conversations_info,
            "conversations.members": self.conversations_members,
            "conversations.replies": self.conversations_replies,
            "conversations.history": self.conversations_history,
        }

    def add_routes(self, web_app: web.Application) -> None:
        """Answer `/api/{method}` (POST, and GET as the SDK sends some methods)."""
        web_app.router.add_route("*", "/api/{method:[a-zA-Z]+(\\.[a-zA-Z]+)+}", self.handle)

    # --- scripting faults -----------------------------------------------------------------------
    def fail(
        self, method: str, *, status: int = 500, times: int = 1, retry_after: int = 0, error: str | None = None
    ) -> None:
        """Answer the next `times` calls of `method` with HTTP `status` (a 429 carries Retry-After), or,
        given `error`, with `{"ok": false, "error": error}` (HTTP 200). Nothing is carried out."""
        if error is not None:
            self.faults.add(Fault(method=method, times=times, error=error))
        else:
            self.faults.add(Fault(method=method, times=times, status=status, retry_after=retry_after))

    def delay(self, method: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next `times` calls of `method` `seconds` late (they are carried out as usual)."""
        self.faults.add(Fault(method=method, times=times, delay=seconds))

    def hold(self, method: str) -> Hold:
        """Keep the next call of `method` waiting until the returned hold is released (it is then carried
        out as usual, even if its client has gone): Slack slow for exactly as long as a test needs."""
        hold = Hold()
        self.faults.add(Fault(method=method, hold=hold))
        return hold

    def drop_connection(self, method: str, *, times: int = 1, after: bool = True) -> None:
        """Close the connection of the next `times` calls of `method` without an answer: after carrying the
        call out (`after=True`: the message exists, the client never hears so), or before."""
        self.faults.add(Fault(method=method, times=times, drop=True, after=after))

    # --- serving ----------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        params = await request_params(request)
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or params.pop("token", None)
        fault = self.faults.take(method)
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.hold is not None:
                fault.hold.arrived.set()
                await fault.hold.released.wait()
            if fault.drop and not fault.after:
                return self._drop(request, method, fault)
            if fault.status is not None:
                self.failed.append((method, fault.label))
                await self._notify()
                error = "ratelimited" if fault.status == 429 else "fatal_error"
                headers = {"Retry-After": str(fault.retry_after)} if fault.status == 429 else {}
                return web.json_response({"ok": False, "error": error}, status=fault.status, headers=headers)
            if fault.error is not None:
                self.failed.append((method, fault.label))
                await self._notify()
                return web.json_response({"ok": False, "error": fault.error})
        answer = self.answer(method, params, given)
        async with self._recorded:
            self.calls.append(SlackCall(method=method, params=params, token=given, response=answer))
            self._recorded.notify_all()
        if fault is not None and fault.drop:
            return self._drop(request, method, fault)
        return web.json_response(answer)

    def answer(self, method: str, params: dict[str, Any], token: str | None) -> Answer:
        """What Slack answers `method` called with `params`."""
        handler = self.methods.get(method)
        if handler is None:
            log.warning("%s was called, which the Slack emulation does not know: answered unknown_method", method)
            return {"ok": False, "error": "unknown_method"}
        if not token:
            return {"ok": False, "error": "not_authed"}
        if (self.token is not None and token != self.token) or not token.startswith(("xox", "xapp-")):
            return {"ok": False, "error": "invalid_auth"}
        try:
            return handler(params)
        except SlackError as refused:
            return {"ok": False, "error": refused.error}

    def _drop(self, request: web.Request, method: str, fault: Fault) -> web.Response:
        self.failed.append((method, fault.label))
        if request.transport is not None:
            request.transport.close()
        return web.Response(status=200)  # written to a closed connection: the client sees a disconnect

    async def _notify(self) -> None:
        async with self._recorded:
            self._recorded.notify_all()

    # --- reading what was called ----------------------------------------------------------------
    def calls_of(self, method: str) -> list[SlackCall]:
        return [call for call in self.calls if call.method == method]

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[SlackCall], bool] = lambda call: True,
        *,
        timeout: float = 10.0,
        count: int = 1,
    ) -> list[SlackCall]:
        """Wait until `count` calls of `method` match `predicate`; return the matching calls."""
        return await self.wait_until(
            lambda: [c for c in self.calls_of(method) if predicate(c)], count=count, timeout=timeout, what=method
        )

    async def wait_until(
        self, probe: Callable[[], Any], *, count: int = 1, timeout: float = 10.0, what: str = "condition"
    ) -> Any:
        """Wait until `probe()` returns a list of at least `count` items, or something truthy; return it.
        `probe` is asked again after every call."""
        deadline = time.monotonic() + timeout
        async with self._recorded:
            while True:
                found = probe()
                if (len(found) >= count) if isinstance(found, list) else found:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}; calls: {[c.method for c in self.calls]}")
                try:
                    await asyncio.wait_for(self._recorded.wait(), remaining)
                except TimeoutError:
                    pass

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Wait until no call came for `quiet` seconds (the bot's background work is done)."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            if len(self.calls) + len(self.failed) == seen:
                return
            seen = len(self.calls) + len(self.failed)
            await asyncio.sleep(quiet)

    # --- auth and directory -----------------------------------------------------------------
    def auth_test(self, p: dict[str, Any]) -> Answer:
        return {
            "ok": True,
            "url": "http://playground.local/",
            "team": TEAM_NAME,
            "user": "bot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "app_id": APP_ID,
            "is_enterprise_install": False,
        }

    def users_info(self, p: dict[str, Any]) -> Answer:
        person = self.workspace.people.get(str(p.get("user") or ""))
        if person is None:
            raise SlackError("user_not_found")
        include_locale = str(p.get("include_locale") or "").lower() in ("1", "true")
        return {"ok": True, "user": person.to_json(include_locale=include_locale)}

    def usergroups_users_list(self, p: dict[str, Any]) -> Answer:
        group = self.workspace.usergroups.get(str(p.get("usergroup") or ""))
        if group is None:
            raise SlackError("no_such_subteam")
        return {"ok": True, "users": list(group.users)}

    def conversations_info(self, p: dict[str, Any]) -> Answer:
        channel = self.workspace.channels[self._channel(p, member=False)]
        info: dict[str, Any] = {"id": channel.id, "name": channel.name, "is_im": channel.is_im}
        info.update({"is_channel": not channel.is_im, "is_member": True, "is_private": channel.is_private})
        if channel.is_im:
            info["user"] = next(m for m in channel.members if m != BOT_USER_ID)
        return {"ok": True, "channel": info}

    def conversations_members(self, p: dict[str, Any]) -> Answer:
        """The members of a channel; one that lists none is open to every person of the workspace."""
        channel = self.workspace.channels[self._channel(p, member=False)]
        members = list(channel.members) or [person.id for person in self.workspace.people.values()]
        return {"ok": True, "members": members, "response_metadata": {"next_cursor": ""}}

    def conversations_replies(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        ts = _required(p, "ts")
        messages = self.workspace.thread(channel, ts)
        if not messages or messages[0].ts != ts:
            raise SlackError("thread_not_found")
        return _page([m.to_api() for m in messages], p)

    def conversations_history(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        top = [
            m
            for m in self.workspace.messages.values()
            if m.channel == channel and m.thread_ts in (None, m.ts) and m.ephemeral_to is None
        ]
        top.sort(key=lambda m: float(m.ts), reverse=True)
        return _page([m.to_api() for m in top], p)

    # --- messages ---------------------------------------------------------------------------
    def chat_post_message(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        text, blocks = _content(p)
        message = self.workspace.post(channel, BOT_USER_ID, text, blocks=blocks, thread_ts=p.get("thread_ts") or None)
        return {"ok": True, "channel": channel, "ts": message.ts, "message": message.to_api()}

    def chat_update(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        message = self._message(channel, p)
        if message.user != BOT_USER_ID:
            raise SlackError("cant_update_message")
        if p.get("text") is None and "blocks" not in p and "attachments" not in p:
            raise SlackError("no_text")
        if len(str(p.get("text") or "")) > MAX_TEXT:
            raise SlackError("msg_too_long")
        message.history.append({"text": message.text, "blocks": message.blocks})
        if p.get("text") is not None:
            message.text = str(p["text"])
        if "blocks" in p:  # absent: the blocks stay; [] removes them, as in Slack
            message.blocks = _blocks(p.get("blocks"))
        message.format = "mrkdwn"
        message.edited = True
        self.workspace.changed(message)
        return {"ok": True, "channel": channel, "ts": message.ts, "text": message.text, "message": message.to_api()}

    def chat_delete(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        message = self._message(channel, p)
        if message.user != BOT_USER_ID:
            raise SlackError("cant_delete_message")
        del self.workspace.messages[(channel, message.ts)]
        self.workspace.changed(message)
        return {"ok": True, "channel": channel, "ts": message.ts}

    def chat_post_ephemeral(self, p: dict[str, Any]) -> Answer:
        channel_id = self._channel(p)
        user = str(p.get("user") or "")
        if user not in self.workspace.people:
            raise SlackError("user_not_found")
        if not self.workspace.channels[channel_id].visible_to(user):
            raise SlackError("user_not_in_channel")
        text, blocks = _content(p)
        message = self.workspace.post(
            channel_id, BOT_USER_ID, text, blocks=blocks, thread_ts=p.get("thread_ts") or None, ephemeral_to=user
        )
        return {"ok": True, "message_ts": message.ts}

    # --- streamed answers -------------------------------------------------------------------
    def chat_start_stream(self, p: dict[str, Any]) -> Answer:
        if not self.streaming:
            raise SlackError("unknown_method")
        channel_id = self._channel(p)
        thread_ts = _required(p, "thread_ts")
        if not self.workspace.channels[channel_id].is_im and not (
            p.get("recipient_user_id") and p.get("recipient_team_id")
        ):
            raise SlackError("invalid_arguments")  # required when streaming to a channel
        mode = p.get("task_display_mode") or "timeline"
        if mode not in TASK_DISPLAY_MODES:
            raise SlackError("invalid_arguments")
        chunks = stream_chunks(p)
        message = self.workspace.post(
            channel_id, BOT_USER_ID, stream_text(p), thread_ts=thread_ts, format="markdown", streaming=True
        )
        if mode == "plan":
            message.blocks = [{"type": "plan", "block_id": "plan", "title": "", "tasks": []}]
        apply_task_chunks(message, chunks)
        return {"ok": True, "channel": channel_id, "ts": message.ts}

    def chat_append_stream(self, p: dict[str, Any]) -> Answer:
        message = self._streaming_message(p)
        if not p.get("markdown_text") and not p.get("chunks"):
            raise SlackError("invalid_arguments")
        chunks = stream_chunks(p)
        message.text += stream_text(p)
        apply_task_chunks(message, chunks)
        self.workspace.changed(message)
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    def chat_stop_stream(self, p: dict[str, Any]) -> Answer:
        message = self._streaming_message(p)
        chunks = stream_chunks(p)
        bottom = _blocks(p.get("blocks"))  # checked before anything changes: a refused call changes nothing
        message.text += stream_text(p)
        apply_task_chunks(message, chunks)
        message.streaming = False
        if bottom:  # "rendered at the bottom of the finalized message"
            message.blocks = [*message.blocks, *bottom]
        self.workspace.changed(message)
        return {"ok": True, "channel": message.channel, "ts": message.ts, "message": message.to_api()}

    def set_status(self, p: dict[str, Any]) -> Answer:
        channel_id = self.workspace.channel_id(_required(p, "channel_id"))
        if channel_id not in self.workspace.channels:
            raise SlackError("channel_not_found")
        thread_ts = _required(p, "thread_ts")
        if "status" not in p:
            raise SlackError("invalid_arguments")
        self.workspace.set_status(channel_id, thread_ts, str(p.get("status") or ""))
        return {"ok": True}

    def set_suggested_prompts(self, p: dict[str, Any]) -> Answer:
        """`channel_id` and `prompts` (1 to 4 objects of `title` and `message`) required, `title` optional."""
        channel_id = self.workspace.channel_id(_required(p, "channel_id"))
        if channel_id not in self.workspace.channels:
            raise SlackError("channel_not_found")
        prompts = p.get("prompts")
        if not isinstance(prompts, list) or not 1 <= len(prompts) <= 4:
            raise SlackError("invalid_arguments")
        for prompt in prompts:
            if not isinstance(prompt, dict) or set(prompt) != {"title", "message"}:
                raise SlackError("invalid_arguments")
            if not all(isinstance(prompt[k], str) and prompt[k] for k in ("title", "message")):
                raise SlackError("invalid_arguments")
        self.workspace.suggested_prompts[channel_id] = {"title": str(p.get("title") or ""), "prompts": prompts}
        self.workspace.changed()
        return {"ok": True}

    # --- modals and the App Home --------------------------------------------------------------
    def views_open(self, p: dict[str, Any], *, push: bool = False) -> Answer:
        user, error = self.workspace.use_trigger(p.get("trigger_id"))
        if user is None:
            raise SlackError(error or "invalid_trigger_id")
        view = _view(p, "modal")
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
        view = _view(p, "modal")
        if p.get("hash") and p["hash"] != modal.hash:
            raise SlackError("hash_conflict")
        self.workspace.update_modal(modal, view)
        return {"ok": True, "view": view_json(modal.id, modal.view, modal.hash)}

    def views_publish(self, p: dict[str, Any]) -> Answer:
        user = _required(p, "user_id")
        if user not in self.workspace.people:
            raise SlackError("user_not_found")
        view = _view(p, "home")
        if not view_blocks_ok(view.get("blocks")):
            raise SlackError("invalid_blocks")
        self.workspace.home_views[user] = view
        self.workspace.changed()
        return {"ok": True, "view": view_json("VHOME" + user, view, "")}

    # --- checks shared by the methods -------------------------------------------------------
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


async def request_params(request: web.Request) -> dict[str, Any]:
    """The arguments of a Web API call, from a JSON or form-encoded body and the query string; the
    arguments a form carries as JSON strings (blocks, view, ...) decoded."""
    if request.content_type == "application/json":
        try:
            body = await request.json() if request.can_read_body else {}
        except json.JSONDecodeError:
            body = {}
        params = dict(body) if isinstance(body, dict) else {}
    else:
        params = dict(await request.post())
    params.update(request.query)
    for key in _JSON_ARGUMENTS:
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except json.JSONDecodeError:
                pass
    return params


CHUNK_TYPES = ("markdown_text", "task_update", "plan_update", "blocks")
TASK_STATUSES = ("pending", "in_progress", "complete", "error")
TASK_DISPLAY_MODES = ("timeline", "plan")
MARKDOWN_LIMIT = 12_000
"""chat.*Stream's markdown_text: "Limit this field to 12,000 characters"."""


def stream_chunks(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The `chunks` of a chat.*Stream call, checked as Slack documents them: a list of objects typed
    `markdown_text` {text}, `task_update` {id, title, status: pending|in_progress|complete|error, details?,
    output?, sources?}, `plan_update` {title} or `blocks` {blocks}; anything else is `invalid_arguments`."""
    chunks = p.get("chunks")
    if chunks is None:
        chunks = []
    if not isinstance(chunks, list) or not all(isinstance(c, dict) for c in chunks):
        raise SlackError("invalid_arguments")
    if len(str(p.get("markdown_text") or "")) > MARKDOWN_LIMIT:
        raise SlackError("msg_too_long")
    for chunk in chunks:
        kind = chunk.get("type")
        if kind not in CHUNK_TYPES:
            raise SlackError("invalid_arguments")
        if kind == "markdown_text" and (not isinstance(chunk.get("text"), str) or len(chunk["text"]) > MARKDOWN_LIMIT):
            raise SlackError("invalid_arguments")
        if kind == "task_update":
            if not all(isinstance(chunk.get(k), str) and chunk[k] for k in ("id", "title")):
                raise SlackError("invalid_arguments")
            if chunk.get("status") not in TASK_STATUSES:
                raise SlackError("invalid_arguments")
            if any(k in chunk and not isinstance(chunk[k], str) for k in ("details", "output")):
                raise SlackError("invalid_arguments")
            if not isinstance(chunk.get("sources", []), list):
                raise SlackError("invalid_arguments")
        if kind == "plan_update" and not (isinstance(chunk.get("title"), str) and chunk["title"]):
            raise SlackError("invalid_arguments")
        if kind == "blocks":
            _blocks(chunk.get("blocks"))
    return chunks


def apply_task_chunks(message: Message, chunks: list[dict[str, Any]]) -> None:
    """What task, plan and blocks chunks leave in the message, as Block Kit: a `task_card` per task id (a
    later update of the same id changes it in place), inside the `plan` block when the stream shows a plan."""
    for chunk in chunks:
        if chunk["type"] == "blocks":
            message.blocks = [*message.blocks, *_blocks(chunk["blocks"])]
            continue
        plan = next((b for b in message.blocks if b.get("type") == "plan"), None)
        if chunk["type"] == "plan_update":
            if plan is None:
                plan = {"type": "plan", "block_id": "plan", "title": "", "tasks": []}
                message.blocks = [plan, *message.blocks]
            plan["title"] = chunk["title"]
        elif chunk["type"] == "task_update":
            cards = plan["tasks"] if plan is not None else message.blocks
            card = next((b for b in cards if b.get("type") == "task_card" and b.get("task_id") == chunk["id"]), None)
            if card is None:
                card = {"type": "task_card", "block_id": f"task-{chunk['id']}", "task_id": chunk["id"]}
                cards.append(card)
            card.update(title=chunk["title"], status=chunk["status"])
            for key in ("details", "output"):
                if key in chunk:
                    card[key] = _rich_text(chunk[key])
            if "sources" in chunk:
                card["sources"] = chunk["sources"]


def _rich_text(text: str) -> dict[str, Any]:
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def stream_text(p: dict[str, Any]) -> str:
    """The Markdown a streaming call adds: `markdown_text` and the text of its `markdown_text` chunks."""
    text = str(p.get("markdown_text") or "")
    for chunk in p.get("chunks") or []:
        if isinstance(chunk, dict) and chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
    return text


def _required(p: dict[str, Any], name: str) -> str:
    value = p.get(name)
    if value is None or str(value) == "":
        raise SlackError("invalid_arguments")
    return str(value)


def _content(p: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """A new message's text and blocks: one of text, blocks or attachments is needed (`no_text`)."""
    text = str(p.get("text") or "")
    blocks = _blocks(p.get("blocks"))
    if not text and not blocks and not p.get("attachments"):
        raise SlackError("no_text")
    if len(text) > MAX_TEXT:
        raise SlackError("msg_too_long")
    return text, blocks


def _blocks(blocks: Any) -> list[dict[str, Any]]:
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
    if not _short_text(block.get("block_id"), ID_LIMIT, optional=True):
        return False
    action_ids = [e.get("action_id") for e in elements if isinstance(e, dict) and e.get("action_id")]
    if len(action_ids) != len(set(action_ids)):
        return False
    for element in elements:
        if not isinstance(element, dict) or element.get("type") not in CONTEXT_ACTIONS_ELEMENTS:
            return False
        if not _short_text(element.get("action_id"), ID_LIMIT, optional=True):
            return False
        if element["type"] == "feedback_buttons":
            if set(element) - {"type", "action_id", "positive_button", "negative_button"}:
                return False
            if not all(_feedback_button_ok(element.get(k)) for k in ("positive_button", "negative_button")):
                return False
        elif not (isinstance(element.get("icon"), str) and _plain_text_ok(element.get("text"))):
            return False
    return True


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
    if len(block_ids) != len(set(block_ids)) or not all(_short_text(b, ID_LIMIT) for b in block_ids):
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
    if not _short_text(element.get("action_id"), ID_LIMIT, optional=True):
        return False
    if element.get("type") == "button":
        return _plain_text_ok(element.get("text")) and _short_text(element.get("value"), VALUE_LIMIT, optional=True)
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
            if not _short_text(text.get("text"), BUTTON_TEXT_LIMIT) or not _short_text(
                option.get("value"), OPTION_VALUE_LIMIT
            ):
                return False
        chosen = element.get("initial_options") or []
        return isinstance(chosen, list) and all(o in options for o in chosen)
    return True


def _feedback_button_ok(button: Any) -> bool:
    if not isinstance(button, dict) or set(button) - {"text", "value", "accessibility_label"}:
        return False
    return (
        _plain_text_ok(button.get("text"))
        and _short_text(button.get("value"), VALUE_LIMIT)
        and _short_text(button.get("accessibility_label"), BUTTON_TEXT_LIMIT, optional=True)
    )


def _plain_text_ok(text: Any) -> bool:
    return (
        isinstance(text, dict)
        and text.get("type") == "plain_text"
        and _short_text(text.get("text"), BUTTON_TEXT_LIMIT)
        and isinstance(text.get("emoji", True), bool)
    )


def _short_text(value: Any, limit: int, *, optional: bool = False) -> bool:
    if value is None:
        return optional
    return isinstance(value, str) and 0 < len(value) <= limit


def _view(p: dict[str, Any], kind: str) -> dict[str, Any]:
    view = p.get("view")
    if not isinstance(view, dict) or view.get("type") != kind:
        raise SlackError("invalid_arguments")
    blocks = view.get("blocks")
    if isinstance(blocks, list) and (
        len(blocks) > VIEW_BLOCK_LIMIT or not all(isinstance(b, dict) and section_text_ok(b) for b in blocks)
    ):
        raise SlackError("invalid_blocks")  # Slack: "must be less than 3001 characters", "no more than 100 items"
    return view


def _page(messages: list[dict[str, Any]], p: dict[str, Any]) -> Answer:
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
