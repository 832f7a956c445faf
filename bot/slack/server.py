"""Run the Bolt app: over HTTP (aiohttp, `POST /slack/events` for events, interactivity and commands)
or over Socket Mode."""

from __future__ import annotations

import asyncio

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp

EVENTS_PATH = "/slack/events"


def build_web_app(app: AsyncApp, *, path: str | None = EVENTS_PATH) -> web.Application:
    """An aiohttp application that hands Slack's requests to `app` (`path` None: no Slack route, as
    over Socket Mode, where nothing verifies a request's signature); other front ends may add routes."""

    async def slack_events(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    async def health(_request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    web_app = web.Application()
    if path is not None:
        web_app.router.add_post(path, slack_events)
    web_app.router.add_get("/health", health)
    return web_app


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
