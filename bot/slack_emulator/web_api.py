"""Slack's Web API, answered from a `Workspace` as strictly as Slack answers it.

Mounted at `/api/{method}`, so a bot's `AsyncWebClient(base_url="http://127.0.0.1:<port>/api/")` talks to
it exactly as it talks to slack.com: form-encoded or JSON bodies (or a query string), a bearer token (or a
`token` argument), `{"ok": ...}` answers with Slack's own error names. A method it does not emulate
answers `unknown_method`, as Slack does, so nothing passes against a method the real Slack would refuse.

The methods are grouped by job (`chat.py`, `views.py`, `directory.py`; `checks.py` what they share);
`SlackWebApi` is all of them, and names each method it answers.

Every call is recorded (`calls`), and a test can script faults (`faults`, see `faults.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .chat import ChatMethods, StreamMethods, stream_text
from .checks import Answer, SlackError
from .directory import DirectoryMethods
from .faults import Fault, Faults, Hold
from .views import ViewMethods, view_json
from .workspace import Workspace, blocks_text

log = logging.getLogger(__name__)

_JSON_ARGUMENTS = ("blocks", "view", "chunks", "metadata", "attachments")
"""Arguments a form-encoded body carries as JSON strings."""


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


class SlackWebApi(ChatMethods, StreamMethods, ViewMethods, DirectoryMethods):
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
            "conversations.open": self.conversations_open,
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
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(remaining):
                        await self._recorded.wait()

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        """Wait until no call came for `quiet` seconds (the bot's background work is done)."""
        deadline = time.monotonic() + timeout
        seen = -1
        while time.monotonic() < deadline:
            if len(self.calls) + len(self.failed) == seen:
                return
            seen = len(self.calls) + len(self.failed)
            await asyncio.sleep(quiet)


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


__all__ = ["SlackCall", "SlackError", "SlackWebApi", "request_params", "stream_text", "view_json"]
