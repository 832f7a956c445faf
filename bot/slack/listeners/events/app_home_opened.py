"""A user opened the bot's App Home: the Home tab shows them their approvals (and, to an admin, the tool
policies); the Messages tab (the agent view's DM) offers suggested prompts and greets them."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...greeting import greet
from ...services import services_of


async def handle_app_home_opened(event: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient) -> None:
    services = services_of(context)
    tab = event.get("tab", "home")
    if tab == "home" and event.get("user") and services.home is not None:
        await services.home.opened(event["user"])
    elif tab == "messages" and event.get("user") and event.get("channel"):
        await greet(services, client, user=event["user"], channel=event["channel"])
