"""A local Slack Web API on loopback, and a sender of signed requests to a Bolt app.

`SlackStub` answers the Web API methods the bot calls (over real HTTP, the way `AsyncWebClient` sends
them), keeps the messages it was asked to post, update or stream, and records every call. It can
answer 429 (with Retry-After) or 500 for the next N calls of a method.

    async with SlackStub() as slack:
        app = create_slack_app(..., api_url=slack.api_url)
        slack.fail("chat.postMessage", status=429, times=1)
        await slack.wait_for("chat.update", lambda call: "Approved" in call.text)

`SignedSender` posts events, block actions and view submissions to the app's `/slack/events` signed
with the real signing secret (`X-Slack-Signature` v0), as Slack does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_sdk.signature import SignatureVerifier

__all__ = ["SignedSender", "SlackCall", "SlackStub", "StubMessage"]

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0TEAM"
_JSON_FIELDS = ("blocks", "view", "chunks", "metadata", "attachments")


@dataclass
class SlackCall:
    """One Web API call the bot made."""

    method: str
    params: dict[str, Any]
    token: str | None

    @property
    def text(self) -> str:
        """The call's visible text: `text`, `markdown_text`, streamed chunks and block texts, joined."""
        parts = [str(self.params.get(key) or "") for key in ("text", "markdown_text")]
        for chunk in self.params.get("chunks") or []:
            parts.append(str(chunk.get("text") or ""))
        parts.append(blocks_text(self.params.get("blocks")))
        view = self.params.get("view")
        if isinstance(view, dict):
            parts.append(blocks_text(view.get("blocks")))
        return "\n".join(part for part in parts if part)


@dataclass
class StubMessage:
    """A message as the stub keeps it."""

    channel: str
    ts: str
    thread_ts: str | None
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    streaming: bool = False
    history: list[dict[str, Any]] = field(default_factory=list)
    """Every earlier version (text, blocks) of the message."""

    @property
    def all_text(self) -> str:
        return "\n".join(part for part in (self.text, blocks_text(self.blocks)) if part)

    def action_ids(self) -> list[str]:
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


@dataclass
class _Failure:
    status: int
    times: int
    retry_after: int


class SlackStub:
    """The Slack Web API on a loopback port (see the module docstring)."""

    def __init__(self, *, streaming: bool = True, host: str = "127.0.0.1"):
        self.streaming = streaming
        """False: chat.startStream answers `unknown_method`, as where streaming is not available."""
        self.host = host
        self.calls: list[SlackCall] = []
        self.messages: dict[tuple[str, str], StubMessage] = {}
        self.views: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, list[_Failure]] = {}
        self.failed: list[tuple[str, int]] = []
        """(method, status) of each call answered with a scripted failure."""
        self._ts = itertools.count(1)
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> SlackStub:
        app = web.Application()
        app.router.add_post("/api/{method}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> SlackStub:  # noqa: PYI034
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/"

    # --- scripting --------------------------------------------------------------------------
    def fail(self, method: str, *, status: int = 500, times: int = 1, retry_after: int = 0) -> None:
        """Answer the next `times` calls of `method` with HTTP `status` (429 carries Retry-After)."""
        self.failures.setdefault(method, []).append(_Failure(status, times, retry_after))

    # --- reading ----------------------------------------------------------------------------
    def calls_of(self, method: str) -> list[SlackCall]:
        return [call for call in self.calls if call.method == method]

    def thread(self, channel: str, thread_ts: str) -> list[StubMessage]:
        """The bot's messages in a thread, oldest first."""
        return sorted(
            (m for m in self.messages.values() if m.channel == channel and m.thread_ts == thread_ts),
            key=lambda m: float(m.ts),
        )

    def message(self, channel: str, ts: str) -> StubMessage:
        return self.messages[(channel, ts)]

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
        """Wait until `probe()` returns something with at least `count` items (or a truthy value)."""
        deadline = time.monotonic() + timeout
        async with self._changed:
            while True:
                found = probe()
                if (len(found) >= count) if isinstance(found, list) else found:
                    return found
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}; calls: {[c.method for c in self.calls]}")
                try:
                    await asyncio.wait_for(self._changed.wait(), remaining)
                except TimeoutError:
                    pass

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Wait until no call came for `quiet` seconds (the bot's background work is done)."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            if len(self.calls) == seen:
                return
            seen = len(self.calls)
            await asyncio.sleep(quiet)

    # --- serving ----------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        auth = request.headers.get("Authorization", "")
        call = SlackCall(method=method, params=params, token=auth.removeprefix("Bearer ") or params.get("token"))
        queued = self.failures.get(method) or []
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            self.failed.append((method, failure.status))
            headers = {"Retry-After": str(failure.retry_after)} if failure.status == 429 else {}
            return web.json_response(
                {"ok": False, "error": "ratelimited" if failure.status == 429 else "fatal_error"},
                status=failure.status,
                headers=headers,
            )
        body = self._answer(method, params)
        async with self._changed:
            self.calls.append(call)
            self._changed.notify_all()
        return web.json_response(body)

    def _next_ts(self) -> str:
        return f"{1_700_000_000 + next(self._ts)}.000100"

    def _answer(self, method: str, p: dict[str, Any]) -> dict[str, Any]:
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return {"ok": True}
        return handler(p)

    def _auth_test(self, p):
        return {
            "ok": True,
            "url": "https://stub.slack.com/",
            "team": "Stub",
            "user": "bot",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _chat_postMessage(self, p):
        ts = self._next_ts()
        message = StubMessage(
            channel=p["channel"],
            ts=ts,
            thread_ts=p.get("thread_ts"),
            text=p.get("text") or "",
            blocks=_as_list(p.get("blocks")),
        )
        self.messages[(message.channel, ts)] = message
        return {
            "ok": True,
            "channel": message.channel,
            "ts": ts,
            "message": {"text": message.text, "ts": ts, "bot_id": BOT_ID},
        }

    def _chat_update(self, p):
        message = self.messages.get((p["channel"], p["ts"]))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message.history.append({"text": message.text, "blocks": message.blocks})
        message.text = p.get("text") if p.get("text") is not None else message.text
        if "blocks" in p:
            message.blocks = _as_list(p.get("blocks"))
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "text": message.text}

    def _chat_postEphemeral(self, p):
        return {"ok": True, "message_ts": self._next_ts()}

    def _chat_startStream(self, p):
        if not self.streaming:
            return {"ok": False, "error": "unknown_method"}
        ts = self._next_ts()
        message = StubMessage(
            channel=p["channel"], ts=ts, thread_ts=p.get("thread_ts"), streaming=True, text=_stream_text(p)
        )
        self.messages[(message.channel, ts)] = message
        return {"ok": True, "channel": message.channel, "ts": ts}

    def _chat_appendStream(self, p):
        message = self.messages.get((p["channel"], p["ts"]))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message.text += _stream_text(p)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"]}

    def _chat_stopStream(self, p):
        message = self.messages.get((p["channel"], p["ts"]))
        if message is None or not message.streaming:
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message.text += _stream_text(p)
        message.streaming = False
        if p.get("blocks"):
            message.blocks = _as_list(p["blocks"])
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "message": {"text": message.text}}

    def _views_open(self, p):
        view_id = "V" + uuid.uuid4().hex[:10].upper()
        view = {**p["view"], "id": view_id} if isinstance(p.get("view"), dict) else {"id": view_id}
        self.views[view_id] = view
        return {"ok": True, "view": view}

    def _views_update(self, p):
        view = {**(p.get("view") or {}), "id": p.get("view_id")}
        self.views[p.get("view_id") or ""] = view
        return {"ok": True, "view": view}

    def _users_info(self, p):
        user = p.get("user", "U0")
        return {
            "ok": True,
            "user": {"id": user, "name": user.lower(), "real_name": f"User {user}", "is_admin": False, "tz": "UTC"},
        }

    def _conversations_replies(self, p):
        messages = [{"ts": m.ts, "text": m.text, "bot_id": BOT_ID} for m in self.thread(p["channel"], p["ts"])]
        return {"ok": True, "messages": messages, "has_more": False}


async def _params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        params = dict(await request.json())
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


def _as_list(blocks: Any) -> list[dict[str, Any]]:
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return list(blocks or [])


def _stream_text(p: dict[str, Any]) -> str:
    text = str(p.get("markdown_text") or "")
    for chunk in p.get("chunks") or []:
        if chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
    return text


class SignedSender:
    """Posts signed requests to a Bolt app's events URL, as Slack does."""

    def __init__(self, url: str, signing_secret: str, *, team_id: str = TEAM_ID):
        self.url = url
        self.verifier = SignatureVerifier(signing_secret)
        self.team_id = team_id
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

    # --- events -----------------------------------------------------------------------------
    def new_ts(self) -> str:
        return f"{1_800_000_000 + next(self._ts)}.000200"

    async def event(
        self,
        event: dict[str, Any],
        *,
        event_id: str | None = None,
        retry_num: int | None = None,
    ) -> tuple[int, str]:
        """An Events API delivery of `event` (Slack's retries carry the same `event_id` and X-Slack-Retry-Num)."""
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
        self, message: StubMessage, action_id: str, *, user: str = "U1", value: str | None = None
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
            "trigger_id": "trigger-" + uuid.uuid4().hex[:8],
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
            "trigger_id": "trigger-" + uuid.uuid4().hex[:8],
            "view": {**view, "state": {"values": values}, "team_id": self.team_id, "app_id": "A0APP", "bot_id": BOT_ID},
        }
        return await self.interaction(payload)
