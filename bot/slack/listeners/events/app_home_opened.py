"""A user opened the bot's App Home tab: show them their approvals (and, to an admin, the tool policies)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from ...services import services_of


async def handle_app_home_opened(event: dict[str, Any], context: AsyncBoltContext) -> None:
    services = services_of(context)
    if event.get("tab", "home") == "home" and event.get("user") and services.home is not None:
        await services.home.opened(event["user"])
