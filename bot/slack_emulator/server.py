"""The emulated Web API on a loopback port of its own, for a bot under test (the playground mounts
`SlackWebApi` in its own server instead).

    async with SlackEmulator(workspace) as slack:
        app = create_slack_app(..., api_url=slack.api_url)
        slack.fail("chat.postMessage", status=429, retry_after=1)
        slack.drop_connection("chat.postMessage")     # posted, but the bot never hears so
        await slack.wait_for("chat.update", lambda call: "Approved" in call.text)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from .web_api import SlackCall, SlackWebApi
from .workspace import BOT_USER_ID, Message, Workspace


class SlackEmulator:
    """A `Workspace` and its `SlackWebApi`, served on `host`; see the module docstring."""

    def __init__(
        self,
        workspace: Workspace | None = None,
        *,
        token: str | None = None,
        streaming: bool = True,
        host: str = "127.0.0.1",
    ):
        self.workspace = workspace or Workspace()
        self.api = SlackWebApi(self.workspace, token=token, streaming=streaming)
        self.host = host
        self.port = 0
        self._runner: web.AppRunner | None = None

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> SlackEmulator:
        app = web.Application()
        self.api.add_routes(app)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> SlackEmulator:  # noqa: PYI034
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/"

    # --- faults (see SlackWebApi) -------------------------------------------------------------
    def fail(
        self, method: str, *, status: int = 500, times: int = 1, retry_after: int = 0, error: str | None = None
    ) -> None:
        self.api.fail(method, status=status, times=times, retry_after=retry_after, error=error)

    def delay(self, method: str, seconds: float, *, times: int = 1) -> None:
        self.api.delay(method, seconds, times=times)

    def drop_connection(self, method: str, *, times: int = 1, after: bool = True) -> None:
        self.api.drop_connection(method, times=times, after=after)

    # --- what was called ----------------------------------------------------------------------
    @property
    def calls(self) -> list[SlackCall]:
        return self.api.calls

    @property
    def failed(self) -> list[tuple[str, int | str]]:
        return self.api.failed

    def calls_of(self, method: str) -> list[SlackCall]:
        return self.api.calls_of(method)

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[SlackCall], bool] = lambda call: True,
        *,
        timeout: float = 10.0,
        count: int = 1,
    ) -> list[SlackCall]:
        return await self.api.wait_for(method, predicate, timeout=timeout, count=count)

    async def wait_until(
        self, probe: Callable[[], Any], *, count: int = 1, timeout: float = 10.0, what: str = "condition"
    ) -> Any:
        return await self.api.wait_until(probe, count=count, timeout=timeout, what=what)

    async def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> None:
        await self.api.settle(quiet=quiet, timeout=timeout)

    # --- what the workspace holds ---------------------------------------------------------------
    @property
    def messages(self) -> dict[tuple[str, str], Message]:
        return self.workspace.messages

    def message(self, channel: str, ts: str) -> Message:
        """The message at (channel, ts); KeyError if there is none (deleted, or never posted)."""
        return self.workspace.messages[(channel, ts)]

    def posted_by(self, call: SlackCall) -> Message:
        """The message a chat.postMessage / chat.startStream call created."""
        return self.message(str(call.response["channel"]), str(call.response["ts"]))

    def thread(self, channel: str, thread_ts: str) -> list[Message]:
        """The bot's messages in a thread (its replies, ephemeral ones left out), oldest first."""
        return [
            m for m in self.workspace.thread(channel, thread_ts) if m.user == BOT_USER_ID and m.thread_ts == thread_ts
        ]

    def person_says(
        self, channel: str, user: str, text: str, *, ts: str | None = None, thread_ts: str | None = None
    ) -> Message:
        """A person's message, as it appears in the workspace when they send it."""
        return self.workspace.post(channel, user, text, ts=ts, thread_ts=thread_ts)
