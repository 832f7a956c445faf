"""Run the Bolt app: over HTTP (aiohttp, `POST /slack/events` for events, interactivity and commands)
or over Socket Mode. A malformed request is refused with a 400 (with `X-Slack-No-Retry: 1`: Slack retries
any non-2xx delivery otherwise, and the same body would be refused again) and an unsigned one with a
401 before anything looks inside it (`request_reading`), and a start that cannot succeed (a port
in use, Slack out of reach) is one error the command line turns into one line."""

from __future__ import annotations

import asyncio
import gc
import logging

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bot.logs import one_line

from .intake_thread import IntakeThread, may_serve_apart
from .request_reading import Refusal, read_slack_request
from .services import services_of_app
from .stores import prepare_slack_tables

EVENTS_PATH = "/slack/events"
SLACK_APP = web.AppKey("slack_app", AsyncApp)
"""The Bolt app a web application built by `build_web_app` serves (`serve_http` reads it)."""
_logger = logging.getLogger("bot.slack")


def build_web_app(app: AsyncApp, *, path: str | None = EVENTS_PATH) -> web.Application:
    """An aiohttp application that hands Slack's requests to `app` (`path` None: no Slack route, as
    over Socket Mode, where nothing verifies a request's signature); other front ends may add routes.
    It brings the adapter's tables up to date and starts the app's background work (the sweep of queued
    messages) at startup, and stops that work on cleanup."""

    intake = services_of_app(app).intake

    async def slack_events(request: web.Request) -> web.Response:
        bolt_request = await read_slack_request(
            await request.read(), query=request.query_string, headers=request.headers
        )
        if isinstance(bolt_request, Refusal):
            return refused(request, bolt_request)
        if intake is not None and (early := await intake.acknowledge(bolt_request)) is not None:
            return await to_aiohttp_response(early)
        return await to_aiohttp_response(await app.async_dispatch(bolt_request))

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    web_app = web.Application()
    web_app[SLACK_APP] = app
    if path is not None:
        web_app.router.add_post(path, slack_events)
    web_app.router.add_get("/health", health)

    async def start_background_work(_web_app: web.Application) -> None:
        await start_serving(app)

    async def stop_background_work(_web_app: web.Application) -> None:
        await stop_serving(app)

    web_app.on_startup.append(start_background_work)
    web_app.on_cleanup.append(stop_background_work)
    return web_app


def refused(request: web.Request, refusal: Refusal) -> web.Response:
    """The answer to a request `read_slack_request` refused, logged in one line."""
    what = "malformed" if refusal.status == 400 else "unsigned"
    _logger.warning("refused a %s request from %s: %s", what, request.remote, refusal.reason)
    # a malformed delivery is no better the next time: Slack is asked not to retry it (a non-2xx
    # is retried three times otherwise); an unsigned one is not Slack's, so nothing to ask
    headers = {"X-Slack-No-Retry": "1"} if refusal.status == 400 else None
    return web.Response(status=refusal.status, text=f"{what} request: {refusal.reason}", headers=headers)


async def start_serving(app: AsyncApp) -> None:
    """What serving `app` needs first, over HTTP or Socket Mode: the adapter's tables up to date, one
    pooled HTTP session for every Web API call (slack_sdk opens a new connection per call without one),
    and the sweep of queued messages."""
    services = services_of_app(app)
    await prepare_slack_tables(services.stores.storage)
    if app.client.session is None:
        # Bolt's client per request and every client made from app.client share it (they copy the attribute)
        app.client.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=app.client.timeout))
    services.turns.start()


async def stop_serving(app: AsyncApp) -> None:
    """Stop what `start_serving` started; a call still made afterwards opens a connection of its own."""
    services = services_of_app(app)
    await services.turns.close()
    if services.intake is not None:
        await services.intake.close()
    if app.client.session is not None:
        await app.client.session.close()


async def stop_turns_left(app: AsyncApp) -> None:
    """After the shutdown's grace, before the storage closes: cut off the turns still at work (`TurnQueue.stop_turns`)."""
    await services_of_app(app).turns.stop_turns()


LISTEN_BACKLOG = 2048
"""Connections the kernel queues for the server before it accepts them (capped by `net.core.somaxconn`).
Slack delivers a mention in a channel twice (`app_mention` and `message`), so a burst of 300 mentions is 600
connections at once; beyond aiohttp's default of 128 the kernel dropped them and the senders' TCP tried
again a second later, which made a third of the acks take over a second."""

SERVER_SHUTDOWN_TIMEOUT = 3.0
"""Seconds the HTTP server gives requests in flight when it stops."""


async def serve_http(web_app: web.Application, *, host: str = "0.0.0.0", port: int = 3000, what: str = "") -> None:
    """Serve until cancelled; one log line once listening (an OSError if the port is taken).

    A web application that serves Slack's events over HTTP (`build_web_app` with a signing secret) is
    served through the intake's thread (`intake_thread.py`): acks apart from the turns."""
    # On stop, requests in flight get a moment, not aiohttp's default minute: the work they started goes on
    # in runs, which the shutdown grace (BOT_SHUTDOWN_GRACE) and the next start's recovery look after.
    runner = web.AppRunner(web_app, shutdown_timeout=SERVER_SHUTDOWN_TIMEOUT)
    await runner.setup()
    apart: IntakeThread | None = None
    try:
        apart = _intake_thread(web_app, host=host, port=port)
        if apart is None:
            await web.TCPSite(runner, host, port, backlog=LISTEN_BACKLOG).start()
            # the port bound, not the one asked for: with --port 0 the system picks it
            bound = runner.addresses[0][1] if runner.addresses else port
        else:
            await web.UnixSite(runner, apart.socket_path).start()
            await apart.start()
            bound = apart.port or port
        _freeze_what_started()
        _logger.getChild("server").info("listening on http://%s:%s%s", host, bound, f" ({what})" if what else "")
        await asyncio.Event().wait()
    finally:
        if apart is not None:
            await apart.stop()
        await runner.cleanup()


def _freeze_what_started() -> None:
    """Leave the objects made at the start (modules, classes, schemas, compiled statements, which live as long
    as the process) out of the garbage collector's full collections (`gc.freeze`). A full collection holds
    every thread, the intake's too, while it walks the objects: walking these took a burst's acks longer
    than answering them."""
    gc.collect()  # what is garbage already is not kept for ever
    gc.freeze()


def _intake_thread(web_app: web.Application, *, host: str, port: int) -> IntakeThread | None:
    app = web_app.get(SLACK_APP)
    services = services_of_app(app) if app is not None else None
    if app is None or services is None or services.intake is None or EVENTS_PATH not in _post_paths(web_app):
        return None
    storage = services.stores.storage
    if not may_serve_apart(storage):
        return None
    return IntakeThread(
        app, services.intake, storage, refused=refused, events_path=EVENTS_PATH, host=host, port=port,
        backlog=LISTEN_BACKLOG, shutdown_timeout=SERVER_SHUTDOWN_TIMEOUT,
    )  # fmt: skip


def _post_paths(web_app: web.Application) -> set[str]:
    return {route.resource.canonical for route in web_app.router.routes() if route.method == "POST" and route.resource}


SOCKET_CONNECT_TIMEOUT = 30.0
"""How long `serve_socket` tries to reach Slack at start before it gives up."""


class SlackUnreachableError(RuntimeError):
    """Socket Mode could not connect at start; the message says why, in one line."""


async def serve_socket(app: AsyncApp, *, app_token: str) -> None:
    """Connect over Socket Mode and serve until cancelled.

    At start the connection is tried for `SOCKET_CONNECT_TIMEOUT` seconds: if Slack cannot be reached
    or refuses a token, `SlackUnreachableError` says so. Once connected, a dropped connection is
    retried for as long as the bot runs, one warning line per attempt.
    """
    socket_logger = _logger.getChild("socket")
    socket_logger.addFilter(one_line)
    handler = AsyncSocketModeHandler(app, app_token, logger=socket_logger)
    await start_serving(app)
    try:
        await _connect(app, handler)
        _logger.getChild("server").info("connected to Slack over Socket Mode")
        await asyncio.Event().wait()
    finally:
        await stop_serving(app)
        await handler.close_async()


async def _connect(app: AsyncApp, handler: AsyncSocketModeHandler) -> None:
    url = app.client.base_url
    try:
        async with asyncio.timeout(SOCKET_CONNECT_TIMEOUT):
            await app.client.auth_test()
            # the app token, checked once here: the client's own connect loop would retry a refusal for ever
            opened = await app.client.apps_connections_open(app_token=handler.client.app_token)
            if not opened.get("url"):
                raise SlackUnreachableError(f"Slack gave no Socket Mode URL (at {url}): {_token_hint(None)}")
            handler.client.wss_uri = opened["url"]
            await handler.connect_async()
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else str(exc)
        raise SlackUnreachableError(f"Slack refused the connection ({error}) at {url}: {_token_hint(error)}") from None
    except TimeoutError:
        raise SlackUnreachableError(
            f"no Socket Mode connection to Slack within {SOCKET_CONNECT_TIMEOUT:.0f} s (at {url}): check the "
            "network, a proxy, or SLACK_API_URL, then start again"
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise SlackUnreachableError(
            f"cannot reach Slack at {url} ({type(exc).__name__}: {exc}): check the network, a proxy, or "
            "SLACK_API_URL, then start again"
        ) from None


def _token_hint(error: str | None) -> str:
    if error in ("invalid_auth", "not_authed", "account_inactive", "token_revoked"):
        return "check SLACK_BOT_TOKEN (the Bot User OAuth Token, xoxb-...) and SLACK_APP_TOKEN (xapp-...)"
    return "check SLACK_APP_TOKEN (an app-level token with connections:write) and that Socket Mode is enabled"
