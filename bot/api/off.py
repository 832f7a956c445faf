"""What the API's addresses answer while the API is off (`BOT_API_TOKEN` unset): a 404 that says so.

Without it the playground's emulated Slack Web API, mounted at `/api/{method}`, took
`/api/openapi.json` for a Slack method and answered `unknown_method`, and `serve` answered a bare
"404: Not Found" that did not say why.
"""

from __future__ import annotations

from aiohttp import web

API_OFF = "The HTTP API is off: set BOT_API_TOKEN (its bearer token) and restart to turn it on."


def add_api_off_routes(web_app: web.Application) -> None:
    """Answer `/api/openapi.json` and every `/api/agents/...` address with a 404 `{"error": API_OFF}`.
    Add it before any route that would take those addresses (the emulated Web API)."""
    web_app.router.add_route("*", "/api/openapi.json", _off)
    web_app.router.add_route("*", "/api/agents/{rest:.*}", _off)


async def _off(_request: web.Request) -> web.Response:
    return web.json_response({"error": API_OFF}, status=404)
