"""The sessions of one configured MCP server: a pool from which each tool call takes a session of its own.

A call holds its session alone until it ends (see `_session`): that is how a server's question reaches the
one call it belongs to. When every session is held, another is opened (up to the server's `maxSessions`),
and past that a call waits for one to be given back; sessions left free longer than the server's
`idleTimeout` are closed, all but one. A call that times out, or finds its session closed (the server
crashed), closes that session: the next call starts (or reconnects) anew.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError

from ._config import McpServerConfig
from ._session import CallHold, ElicitationHandler, McpServerError, McpSession

_CLOSED = types.CONNECTION_CLOSED


class ServerConnection:
    """The sessions of one configured server; `call` and `list_tools` open one on demand."""

    def __init__(self, config: McpServerConfig):
        self.config = config
        self._sessions: list[McpSession] = []
        """Open sessions, and those being opened (held by the call that opens them)."""
        self._given_back = asyncio.Condition()
        self._reaper: asyncio.Task[None] | None = None
        self.live_calls: dict[tuple[str, str], Any] = {}
        """(run id, tool call id) -> this server's calls that wait for a human's answer (`LiveCall`s)."""

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def sessions(self) -> int:
        """How many sessions are open (or opening): stdio server processes, or HTTP sessions."""
        return len(self._sessions)

    async def list_tools(self) -> list[types.Tool]:
        """The server's tools (every page), on any open session (opening one if there is none)."""
        session = next((s for s in self._sessions if s.alive), None)
        if session is None:
            session = await self._take(CallHold(), self.config.start_timeout)
            await self._give_back(session, healthy=True)
        assert session.client is not None
        found: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            async with asyncio.timeout(self.config.start_timeout):
                page = await session.client.list_tools(params=params)
            found += page.tools
            cursor = page.next_cursor
            if not cursor:
                return found

    async def call(
        self, tool: str, arguments: dict[str, Any], *, on_elicit: ElicitationHandler | None = None
    ) -> types.CallToolResult:
        """Call one tool on a session of its own; `on_elicit` answers the questions the server asks on it.
        A crash, a hang past the call timeout or a broken session is a `McpServerError` (and the session is
        closed, so the next call restarts the server)."""
        hold = CallHold(ask=on_elicit)
        session = await self._take(hold, self.config.call_timeout)
        assert session.client is not None
        healthy = False
        work = asyncio.ensure_future(session.client.call_tool(tool, arguments))
        try:
            await self._within_timeout(work, hold)
            result = work.result()
            healthy = True
            if hold.refused_links:
                raise McpServerError(refused_link(self.name, hold.refused_links[0], result))
            return result
        except TimeoutError:
            raise McpServerError(
                f"the MCP server {self.name!r} did not answer {tool!r} within {self.config.call_timeout:g}s; "
                "it is restarted on the next call"
            ) from None
        except MCPError as exc:
            if exc.code == _CLOSED:
                raise McpServerError(
                    f"the MCP server {self.name!r} stopped during {tool!r} (connection closed); "
                    "it is restarted on the next call"
                ) from None
            healthy = True
            raise McpServerError(f"the MCP server {self.name!r} refused {tool!r}: {exc.message}") from None
        finally:
            hold.ended.set()  # a question of this call still waiting is cancelled, a later one declined
            if not work.done():
                work.cancel()
            await self._give_back(session, healthy=healthy)

    async def _within_timeout(self, work: asyncio.Future[Any], hold: CallHold) -> None:
        """Wait for `work`; the call timeout runs only while none of the call's questions waits for a human."""
        left = self.config.call_timeout
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            done, _ = await asyncio.wait({work}, timeout=min(left, 0.5) if left > 0 else 0)
            if done:
                return
            if hold.questions_open == 0:
                left -= loop.time() - started
            if left <= 0:
                raise TimeoutError

    async def _take(self, hold: CallHold, timeout: float) -> McpSession:
        """A session for `hold` alone: a free one, else a new one within `maxSessions`, else the first one
        given back within `timeout` seconds."""
        try:
            async with asyncio.timeout(timeout):
                async with self._given_back:
                    while True:
                        for dead in [s for s in self._sessions if s.hold is None and not s.alive]:
                            self._sessions.remove(dead)  # its server exited while it was free
                            await dead.close()
                        found = next((s for s in reversed(self._sessions) if s.hold is None), None)
                        if found is None and len(self._sessions) < self.config.max_sessions:
                            found = McpSession(self.config)
                            self._sessions.append(found)
                        if found is not None:
                            found.hold = hold
                            session = found
                            break
                        await self._given_back.wait()
        except TimeoutError:
            raise McpServerError(
                f'the MCP server {self.name!r} has {self.config.max_sessions} calls open (its "maxSessions") '
                f"and none ended within {timeout:g}s"
            ) from None
        if session.alive:
            return session
        try:
            await session.open()
        except BaseException:
            session.hold = None
            await self._forget(session)
            raise
        return session

    async def _give_back(self, session: McpSession, *, healthy: bool) -> None:
        """The call on `session` ended; a session that failed it is closed rather than used again."""
        session.hold = None
        session.free_since = asyncio.get_running_loop().time()
        if not healthy or not session.alive:
            await session.close()
            await self._forget(session)
            return
        async with self._given_back:
            self._given_back.notify()
        if len(self._sessions) > 1 and (self._reaper is None or self._reaper.done()):
            self._reaper = asyncio.get_running_loop().create_task(self._close_idle(), name=f"mcp idle {self.name}")

    async def _forget(self, session: McpSession) -> None:
        async with self._given_back:
            if session in self._sessions:
                self._sessions.remove(session)
            self._given_back.notify()  # room for a new session

    async def _close_idle(self) -> None:
        """Close the sessions free for longer than `idleTimeout`, keeping one open for the next call."""
        loop = asyncio.get_running_loop()
        while len(self._sessions) > 1:
            await asyncio.sleep(self.config.idle_timeout / 2)
            now = loop.time()
            idle = sorted(
                (s for s in self._sessions if s.hold is None and now - s.free_since >= self.config.idle_timeout),
                key=lambda s: s.free_since,
            )
            for session in idle[: len(self._sessions) - 1]:
                if session.hold is None and session in self._sessions:
                    self._sessions.remove(session)
                    await session.close()

    async def aclose(self) -> None:
        """Close every session (the stdio processes end)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(BaseException):
                await self._reaper
        sessions, self._sessions = self._sessions, []
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


def refused_link(server: str, url: str, result: types.CallToolResult) -> str:
    """What the thread and the model read of a call whose server sent a link the bot does not open: the
    scheme only (the link itself is never shown), and what the server answered after the decline."""
    scheme = url.split(":", 1)[0][:20] if ":" in url else "no scheme"
    said = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))[:500]
    return (
        f"the MCP server {server!r} sent a link the bot does not open ({scheme}: only https:// links are "
        f"offered), so its question was declined; the server then answered: {said or '(nothing)'}"
    )


__all__ = ["ElicitationHandler", "McpServerError", "ServerConnection"]
