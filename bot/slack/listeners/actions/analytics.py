"""The Approval analytics button in an admin's App Home: compute the numbers now and open them in a modal."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from memory import approval_analytics

from ...analytics_builder import build_analytics_modal
from ...directory import DirectoryError
from ...services import services_of
from ._click import NOT_OPENED, open_modal


async def handle_approval_analytics_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    try:
        admin = services.directory is not None and await services.directory.is_admin(user_id)
    except DirectoryError:
        admin = False
    if not admin:
        services.logger.warning("%s, who is not an admin, asked for the approval analytics", user_id)
        if services.home is not None:
            await services.home.publish(user_id)  # a stale Home: show them what they may do now
        return
    storage = services.agent.storage
    analytics = await approval_analytics(storage, quick_seconds=services.quick_approval_seconds)
    tr = await services.languages.of_person(user_id)
    opened = await open_modal(services, client, body.get("trigger_id"), build_analytics_modal(analytics, tr))
    if not opened and services.home is not None:
        await services.home.show_bulk_result(user_id, tr.gettext(NOT_OPENED))
