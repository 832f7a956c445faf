"""One MCP session with a server (a stdio process of its own, or one Streamable HTTP session), and the one
tool call that holds it.

Neither stdio nor the SDK's Streamable HTTP client tells a client which of its requests a server's
`elicitation/create` belongs to (the client's `ClientRequestContext` carries only the server's own request
id, and the HTTP client drops the stream a message came on). So a call holds a session alone for as long as
it runs: a question that arrives on a session belongs to exactly the call on it, and a question on a session
that no call holds (or whose call has ended) is declined to the server, never handed to another call.

The SDK's transports and `ClientSession` are async context managers whose task groups must be entered and
left by one task, so each session lives in a task of its own (`_hold`), and calls reach it from any task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ._checked_client import CheckedClientSession
from ._config import McpServerConfig

log = logging.getLogger(__name__)

ElicitationHandler = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult | types.ErrorData]]
"""Answers a server's `elicitation/create` during a call (asks a human and waits), or refuses it (an error)."""


class McpServerError(RuntimeError):
    """An MCP server could not be reached, stopped, or did not answer in time; the message says which
    server and what happened, in one line (never a secret from the configuration)."""


@dataclass(eq=False, kw_only=True)
class CallHold:
    """A tool call's hold on a session, from before its request is sent until after its answer came."""

    ask: ElicitationHandler | None = None
    """Who answers the questions of this call; None: the call cannot be asked (they are declined)."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    questions_open: int = 0
    """The call's questions waiting for a human now: its timeout does not run meanwhile."""
    refused_links: list[str] = field(default_factory=list)
    """URL-mode questions of the call declined because the bot does not open their link."""


class McpSession:
    """One session with the server; `open` starts it, `close` ends it (stopping a stdio server)."""

    def __init__(self, config: McpServerConfig):
        self.config = config
        self.client: ClientSession | None = None
        self.hold: CallHold | None = None
        """The call that holds this session now; None while it is free."""
        self.free_since = 0.0
        """When (the loop's clock) it was last given back."""
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def alive(self) -> bool:
        """Opened, and neither closed nor broken (a stdio server that exited ends its task)."""
        return self.client is not None and self._holder is not None and not self._holder.done()

    async def open(self) -> None:
        """Start the server (stdio) or a session with it (HTTP), within its start timeout."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[ClientSession] = loop.create_future()
        self._holder = loop.create_task(self._hold(ready), name=f"mcp server {self.name}")
        try:
            async with asyncio.timeout(self.config.start_timeout):
                self.client = await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise McpServerError(
                f"the MCP server {self.name!r} did not start within {self.config.start_timeout:g}s"
            ) from None
        except BaseException:
            await self.close()
            raise

    async def _hold(self, ready: asyncio.Future[ClientSession]) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.config.command is not None:
                    params = StdioServerParameters(
                        command=self.config.command,
                        args=list(self.config.args),
                        env=dict(self.config.env) or None,
                        cwd=self.config.cwd,
                    )
                    streams = await stack.enter_async_context(stdio_client(params))
                else:
                    assert self.config.url is not None  # the config has a command or a url
                    http = create_mcp_http_client(headers=dict(self.config.headers) or None)
                    await stack.enter_async_context(http)
                    streams = await stack.enter_async_context(streamable_http_client(self.config.url, http_client=http))
                session = await stack.enter_async_context(
                    CheckedClientSession(streams[0], streams[1], elicitation_callback=self._on_elicit)
                )
                await session.initialize()
                if not ready.done():
                    ready.set_result(session)
                await self._closing.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(McpServerError(f"the MCP server {self.name!r} was stopped while it started"))
            raise
        except BaseException as exc:  # noqa: BLE001 - told to whoever waits for the session
            if not ready.done():
                ready.set_exception(McpServerError(f"the MCP server {self.name!r} did not start: {_one_line(exc)}"))
            else:
                log.warning("MCP server %r: a session ended: %s", self.name, _one_line(exc))

    async def _on_elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        hold = self.hold  # read once: the call on this session when the question came
        if hold is None or hold.ask is None or hold.ended.is_set():
            log.warning("MCP server %r asked a question outside of a call; it was declined", self.name)
            return types.ElicitResult(action="decline")
        if isinstance(params, types.ElicitRequestURLParams) and not link_allowed(
            params.url, http_loopback=self.config.allow_http_loopback
        ):
            log.warning("MCP server %r sent a link the bot does not open; its question was declined", self.name)
            hold.refused_links.append(params.url)
            return types.ElicitResult(action="decline")
        hold.questions_open += 1
        asking = asyncio.ensure_future(hold.ask(params))
        ended = asyncio.ensure_future(hold.ended.wait())
        try:
            await asyncio.wait({asking, ended}, return_when=asyncio.FIRST_COMPLETED)
            if not asking.done():  # the call ended (or failed) first: nobody is left to answer
                return types.ElicitResult(action="cancel")
            return asking.result()
        except Exception as exc:  # noqa: BLE001 - the server must get an answer, the human gets the error logged
            log.warning("MCP server %r: answering its question failed: %r", self.name, exc)
            return types.ElicitResult(action="cancel")
        finally:
            hold.questions_open -= 1
            for task in (asking, ended):
                task.cancel()

    async def close(self) -> None:
        """End the session (a stdio server's process stops); a server that will not stop is cancelled."""
        holder, self._holder, self.client = self._holder, None, None
        if holder is None:
            return
        self._closing.set()
        try:
            async with asyncio.timeout(10):
                await asyncio.shield(holder)
        except (TimeoutError, Exception):  # noqa: BLE001 - a server that will not stop is cancelled
            holder.cancel()
            with contextlib.suppress(BaseException):
                await holder


LINK_LIMIT = 3000
"""The longest URL a Slack link button takes."""
_LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def link_allowed(url: str, *, http_loopback: bool = False) -> bool:
    """Whether the bot offers a server's link to people: an `https://` URL with a host (or, with
    `http_loopback`, an `http://` one to this machine), one Slack can show, without spaces or controls."""
    if len(url) > LINK_LIMIT or any(c.isspace() or not c.isprintable() for c in url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return False
    if not host:
        return False
    return parts.scheme == "https" or (http_loopback and parts.scheme == "http" and host in _LOOPBACK)


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot run {exc.filename or 'its command'!r} ({exc.strerror})"
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["CallHold", "ElicitationHandler", "McpServerError", "McpSession", "link_allowed"]
