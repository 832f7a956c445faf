"""One live connection to one MCP server (stdio or Streamable HTTP), restarted when it breaks.

The SDK's transports and `ClientSession` are async context managers whose task groups must be entered
and left by one task, so each connection lives in a task of its own (`_hold`), and calls reach its
session from any task. A call that times out, or finds the connection closed (the server crashed),
drops the connection: the stdio process is stopped, and the next call starts (or reconnects) anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from ._config import McpServerConfig

log = logging.getLogger(__name__)

ElicitationHandler = Callable[[types.ElicitRequestParams], Awaitable[types.ElicitResult]]
"""Answers a server's `elicitation/create` during a call (asks a human and waits)."""

_CLOSED = types.CONNECTION_CLOSED


class McpServerError(RuntimeError):
    """An MCP server could not be reached, stopped, or did not answer in time; the message says which
    server and what happened, in one line (never a secret from the configuration)."""


class ServerConnection:
    """The connection to one configured server; `call` (re)connects on demand."""

    def __init__(self, config: McpServerConfig):
        self.config = config
        self._session: ClientSession | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing: asyncio.Event | None = None
        self._connecting = asyncio.Lock()
        self._elicitations: dict[int, ElicitationHandler] = {}
        """Live calls that may be asked a question, by a number of their own (see `_on_elicit`)."""
        self._next_call = 0
        self.live_calls: dict[tuple[str, str], Any] = {}
        """(run id, tool call id) -> this connection's calls that wait for a human's answer (`LiveCall`s)."""
        self._questions_open = 0
        """Elicitations waiting for a human now: the call timeout does not run meanwhile."""

    @property
    def name(self) -> str:
        return self.config.name

    async def list_tools(self) -> list[types.Tool]:
        """The server's tools (every page), connecting first if needed."""
        session = await self._connected()
        found: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await asyncio.wait_for(session.list_tools(params=params), self.config.start_timeout)
            found += page.tools
            cursor = page.next_cursor
            if not cursor:
                return found

    async def call(
        self, tool: str, arguments: dict[str, Any], *, on_elicit: ElicitationHandler | None = None
    ) -> types.CallToolResult:
        """Call one tool; a crash, a hang past the call timeout or a broken connection is a `McpServerError`
        (and the connection is dropped, so the next call restarts the server)."""
        session = await self._connected()
        number, self._next_call = self._next_call, self._next_call + 1
        if on_elicit is not None:
            self._elicitations[number] = on_elicit
        work = asyncio.ensure_future(session.call_tool(tool, arguments))
        try:
            await self._within_timeout(work)
            return work.result()
        except TimeoutError:
            work.cancel()
            await self.drop()
            raise McpServerError(
                f"the MCP server {self.name!r} did not answer {tool!r} within {self.config.call_timeout:g}s; "
                "it is restarted on the next call"
            ) from None
        except MCPError as exc:
            if exc.code == _CLOSED:
                await self.drop()
                raise McpServerError(
                    f"the MCP server {self.name!r} stopped during {tool!r} (connection closed); "
                    "it is restarted on the next call"
                ) from None
            raise McpServerError(f"the MCP server {self.name!r} refused {tool!r}: {exc.message}") from None
        finally:
            self._elicitations.pop(number, None)
            if not work.done():
                work.cancel()

    async def _within_timeout(self, work: asyncio.Future[Any]) -> None:
        """Wait for `work`; the call timeout runs only while no question of this server waits for a human."""
        left = self.config.call_timeout
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            done, _ = await asyncio.wait({work}, timeout=min(left, 0.5) if left > 0 else 0)
            if done:
                return
            if self._questions_open == 0:
                left -= loop.time() - started
            if left <= 0:
                raise TimeoutError

    async def _on_elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        # stdio and HTTP do not tell a client which of its calls a question belongs to: it goes to the
        # oldest live call that can be asked (calls to one server that elicit are rare and short)
        handlers = [self._elicitations[n] for n in sorted(self._elicitations)]
        if not handlers:
            return types.ErrorData(code=types.INVALID_REQUEST, message="no tool call of this client is waiting")
        self._questions_open += 1
        try:
            return await handlers[0](params)
        except Exception as exc:  # noqa: BLE001 - the server must get an answer, the human gets the error logged
            log.warning("MCP server %r: answering its question failed: %r", self.name, exc)
            return types.ElicitResult(action="cancel")
        finally:
            self._questions_open -= 1

    async def _connected(self) -> ClientSession:
        async with self._connecting:
            if self._session is not None and self._holder is not None and not self._holder.done():
                return self._session
            await self.drop()
            ready: asyncio.Future[ClientSession] = asyncio.get_running_loop().create_future()
            self._closing = asyncio.Event()
            self._holder = asyncio.get_running_loop().create_task(
                self._hold(ready, self._closing), name=f"mcp server {self.name}"
            )
            try:
                self._session = await asyncio.wait_for(asyncio.shield(ready), self.config.start_timeout)
            except TimeoutError:
                await self.drop()
                raise McpServerError(
                    f"the MCP server {self.name!r} did not start within {self.config.start_timeout:g}s"
                ) from None
            except McpServerError:
                await self.drop()
                raise
            return self._session

    async def _hold(self, ready: asyncio.Future[ClientSession], closing: asyncio.Event) -> None:
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
                    http = create_mcp_http_client(headers=dict(self.config.headers) or None)
                    await stack.enter_async_context(http)
                    streams = await stack.enter_async_context(streamable_http_client(self.config.url, http_client=http))
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], elicitation_callback=self._on_elicit)
                )
                await session.initialize()
                if not ready.done():
                    ready.set_result(session)
                await closing.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.set_exception(McpServerError(f"the MCP server {self.name!r} was stopped while it started"))
            raise
        except BaseException as exc:  # noqa: BLE001 - told to whoever waits for the connection
            if not ready.done():
                ready.set_exception(McpServerError(f"the MCP server {self.name!r} did not start: {_one_line(exc)}"))
            else:
                log.warning("MCP server %r: the connection ended: %s", self.name, _one_line(exc))

    async def drop(self) -> None:
        """Close the connection (stopping a stdio server); the next call connects again."""
        holder, self._holder, self._session = self._holder, None, None
        if holder is None:
            return
        if self._closing is not None:
            self._closing.set()
        try:
            await asyncio.wait_for(asyncio.shield(holder), 10)
        except (TimeoutError, Exception):  # noqa: BLE001 - a server that will not stop is cancelled
            holder.cancel()
            with contextlib.suppress(BaseException):
                await holder

    async def aclose(self) -> None:
        await self.drop()


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError | PermissionError):
        return f"cannot run {exc.filename or 'its command'!r} ({exc.strerror})"
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


__all__ = ["ElicitationHandler", "McpServerError", "ServerConnection"]
