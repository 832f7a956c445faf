"""The Approve button."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve

from ...decisions import decide
from ...services import services_of
from ._click import checked_click, decide_or_tell_clicker


async def handle_approve_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind="approval", action="approve")
    if call is not None:
        await decide_or_tell_clicker(
            services, client, click, decide(services, client, call, Approve(), user_id=click.user_id, via=click.via)
        )
