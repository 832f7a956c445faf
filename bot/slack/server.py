"""Run the Bolt app: over HTTP (aiohttp, `POST /slack/events` for events, interactivity and commands)
or over Socket Mode."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

EVENTS_PATH = "/slack/events"
_logger = logging.getLogger("bot.slack")


def build_web_app(app: AsyncApp, *, path: str | None = EVENTS_PATH) -> web.Application:
    """An aiohttp application that hands Slack's requests to `app` (`path` None: no Slack route, as
    over Socket Mode, where nothing verifies a request's signature); other front ends may add routes."""

    async def slack_events(request: web.Request) -> web.Response:
        bolt_request = await _parsed(request)
        if bolt_request is None:
            return web.Response(status=400, text="malformed request body")
        return await to_aiohttp_response(await app.async_dispatch(bolt_request))

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    web_app = web.Application()
    if path is not None:
        web_app.router.add_post(path, slack_events)
    web_app.router.add_get("/health", health)
    return web_app


async def _parsed(request: web.Request) -> AsyncBoltRequest | None:
    """The request as Bolt reads it, or None (and one log line) when its body, or its `payload`, is not
    a JSON object: such a request is refused with a 400 before anything, the signature check included,
    looks inside it."""
    try:
        bolt_request = AsyncBoltRequest(
            body=await request.text(),
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
        )
    except (ValueError, TypeError, AttributeError) as exc:  # bad JSON, bad encoding, a non-object body
        _logger.warning("refused a malformed request from %s: %s", request.remote, _short(exc))
        return None
    if not isinstance(bolt_request.body, dict):
        _logger.warning("refused a malformed request from %s: the body is not a JSON object", request.remote)
        return None
    return bolt_request


def _short(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


async def serve_http(web_app: web.Application, *, host: str = "0.0.0.0", port: int = 3000) -> None:
    """Serve until cancelled."""
    runner = web.AppRunner(web_app)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


async def serve_socket(app: AsyncApp, *, app_token: str) -> None:
    """Connect over Socket Mode and serve until cancelled."""
    handler = AsyncSocketModeHandler(app, app_token)
    try:
        await handler.start_async()
    finally:
        await handler.close_async()
