"""The ack path in a thread of its own: `python -m bot serve`'s HTTP server, apart from the bot's loop.

On one event loop an ack waits for whatever the turns do between their awaits (a model's reply read, a
Block Kit message built, a statement's rows turned into records): under a burst, the acks of the last
deliveries waited behind the turns of the first. So the public port is served here, by a thread with its
own event loop and its own database connections (a `Storage` of the same URL):

- a signed Events API delivery is checked, recorded and answered here (`EventIntake.acknowledge` with this
  thread's `EventLog`); Bolt's dispatch of it is handed to the bot's loop;
- the records (events, clicks) are written by a second thread, which holds the database connections
  (`_WritingThread`): the answer of a batch of claims is read as soon as it comes and the next batch goes at
  once, where on this thread's loop both waited until the loop had read the requests that came meanwhile
  (on SQLite, aiosqlite's own thread did that already);
- any other Slack request (a click, a form, a command) is read here and dispatched by Bolt on the bot's
  loop, its response sent from here;
- every other route (`/health`, `/metrics`, the HTTP API) is the bot's own web application, served on
  a Unix socket by the bot's loop, and forwarded to it as it came.

The thread shares the interpreter with the bot's loop, so their Python code still takes turns (the GIL
changes hands at every system call and at least every few milliseconds), but an ack no longer waits for a
turn's step to end, and the bot's loop dispatches nothing while deliveries are being acknowledged
(`EventIntake`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp

from memory import Storage

from ..stopping import cut_off_the_rest
from .intake import EventIntake
from .request_reading import Refusal, read_slack_request
from .stores import ClickLog, EventLog

_logger = logging.getLogger("bot.slack.intake")

INTAKE_POOL_SIZE = 2
"""Database connections the thread keeps: the claims of the deliveries that arrive together go in one
transaction (`EventLog`), so a burst needs few."""

_HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade",
     "proxy-authorization", "proxy-authenticate"}
)  # fmt: skip


class IntakeThread:
    """Serves `host:port` from a thread of its own (see the module docstring) until `stop`."""

    def __init__(
        self,
        app: AsyncApp,
        intake: EventIntake,
        storage: Storage,
        *,
        refused: Callable[[web.Request, Refusal], web.Response],
        events_path: str,
        host: str,
        port: int,
        backlog: int,
        shutdown_timeout: float,
    ):
        self.app = app
        self.intake = intake
        self.storage = storage
        self._refused = refused
        self._events_path = events_path
        self._host, self._port, self._backlog = host, port, backlog
        self._shutdown_timeout = shutdown_timeout
        self._bot_loop: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._socket_dir = tempfile.TemporaryDirectory(prefix="bot-intake-")
        self.socket_path = str(Path(self._socket_dir.name) / "bot.sock")
        """Where the bot's own web application listens (a Unix socket) for what the thread forwards."""
        self.port: int | None = None
        """The port bound (with port 0 the system picks it), once started."""

    async def start(self) -> None:
        """Start the thread and wait until it listens; its error (a port in use) is raised here."""
        self._bot_loop = asyncio.get_running_loop()
        self.intake.start()
        listening: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(listening,), name="slack-intake", daemon=True)
        self._thread.start()
        self.port = await asyncio.wrap_future(listening)

    async def stop(self) -> None:
        """Stop listening, give requests in flight `shutdown_timeout` seconds, and end the thread."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stopping.set)
            except RuntimeError:  # the loop closed meanwhile
                pass
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        self._socket_dir.cleanup()

    # --- in the thread ------------------------------------------------------------------------------
    def _run(self, listening: concurrent.futures.Future[int]) -> None:
        try:
            asyncio.run(self._serve(listening))
        except BaseException as exc:  # noqa: BLE001 - told to whoever waits for the start
            if not listening.done():
                listening.set_exception(exc)
            else:
                _logger.exception("the intake thread stopped")

    async def _serve(self, listening: concurrent.futures.Future[int]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        storage = Storage(
            self.storage.url,
            pool_size=INTAKE_POOL_SIZE,
            clock=self.storage.clock,
            reconnect_for=self.storage.reconnect_for,
        )
        self.storage.notices.count_as_own(storage.engine)  # the events it records are this replica's to answer
        writing = _WritingThread(storage)
        write_loop = await writing.start()
        events, clicks = EventLog(storage, write_loop=write_loop), ClickLog(storage, write_loop=write_loop)
        forward = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.socket_path), auto_decompress=False)

        async def slack_events(request: web.Request) -> web.StreamResponse:
            bolt_request = await read_slack_request(
                await request.read(), query=request.query_string, headers=request.headers
            )
            if isinstance(bolt_request, Refusal):
                return self._refused(request, bolt_request)
            if (early := await self.intake.acknowledge(bolt_request, events=events, clicks=clicks)) is not None:
                return await to_aiohttp_response(early)
            return await to_aiohttp_response(await self._on_bot_loop(self.app.async_dispatch(bolt_request)))

        async def forwarded(request: web.Request) -> web.StreamResponse:
            return await _forward(forward, request)

        web_app = web.Application(client_max_size=1024**2)
        web_app.router.add_post(self._events_path, slack_events)
        web_app.router.add_route("*", "/{tail:.*}", forwarded)
        runner = web.AppRunner(web_app, shutdown_timeout=self._shutdown_timeout, access_log=None)
        try:
            await runner.setup()
            await web.TCPSite(runner, self._host, self._port, backlog=self._backlog).start()
            listening.set_result(runner.addresses[0][1] if runner.addresses else self._port)
            await self._stopping.wait()
        finally:
            await runner.cleanup()
            await forward.close()
            await writing.stop()

    async def _on_bot_loop(self, work: Any) -> Any:
        assert self._bot_loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._bot_loop))


class _WritingThread:
    """A thread whose event loop writes the intake's records (`ClaimWriter`), with `storage`'s connections."""

    def __init__(self, storage: Storage):
        self.storage = storage
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    async def start(self) -> asyncio.AbstractEventLoop:
        """Start the thread; its loop."""
        started: concurrent.futures.Future[asyncio.AbstractEventLoop] = concurrent.futures.Future()
        self._thread = threading.Thread(target=asyncio.run, args=(self._hold(started),), name="slack-intake-writes")
        self._thread.daemon = True
        self._thread.start()
        return await asyncio.wrap_future(started)

    async def stop(self) -> None:
        """Close the storage (on the thread's loop) and end the thread."""
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    async def _hold(self, started: concurrent.futures.Future[asyncio.AbstractEventLoop]) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        started.set_result(self._loop)
        try:
            await self._stopping.wait()
        finally:
            await cut_off_the_rest()  # a batch of claims still under way ends while its connection is open
            await self.storage.close()


async def _forward(session: aiohttp.ClientSession, request: web.Request) -> web.StreamResponse:
    """`request` as the bot's own web application answers it (over its Unix socket)."""
    headers = {name: value for name, value in request.headers.items() if name.lower() not in _HOP_BY_HOP}
    if request.remote:
        headers["X-Forwarded-For"] = request.remote
    async with session.request(
        request.method, f"http://bot{request.rel_url}", headers=headers, data=await request.read(),
        allow_redirects=False,
    ) as answer:  # fmt: skip
        body = await answer.read()
        kept = {name: value for name, value in answer.headers.items() if name.lower() not in _HOP_BY_HOP}
        return web.Response(status=answer.status, body=body, headers=kept)


def may_serve_apart(storage: Storage) -> bool:
    """Whether the intake can open its own connections to `storage`'s database (not an in-memory SQLite
    database, which lives inside one engine)."""
    database = storage.engine.url.database
    return not (storage.is_sqlite and database in (None, "", ":memory:"))
