"""The emulated Web API on a loopback port of its own, for a bot under test (the playground mounts
`SlackWebApi` in its own server instead). Faults are scripted and calls read as on `SlackWebApi`.

    async with SlackEmulator(workspace) as slack:
        app = create_slack_app(..., api_url=slack.api_url)
        slack.fail("chat.postMessage", status=429, retry_after=1)
        slack.drop_connection("chat.postMessage")     # posted, but the bot never hears so
        await slack.wait_for("chat.update", lambda call: "Approved" in call.text)
"""

from __future__ import annotations

from aiohttp import web

from .web_api import SlackCall, SlackWebApi
from .workspace import BOT_USER_ID, Message, Workspace


class SlackEmulator(SlackWebApi):
    """A `Workspace`'s `SlackWebApi`, served on `host`, with what a test reads of the workspace; see the
    module docstring."""

    def __init__(
        self,
        workspace: Workspace | None = None,
        *,
        token: str | None = None,
        streaming: bool = True,
        host: str = "127.0.0.1",
    ):
        super().__init__(workspace or Workspace(), token=token, streaming=streaming)
        self.host = host
        self.port = 0
        self._runner: web.AppRunner | None = None

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> SlackEmulator:
        app = web.Application()
        self.add_routes(app)
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
