"""The Approve button."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...decisions import ClickRefused, approve, check_click, refuse
from ...services import services_of
from ._click import click_of


async def handle_approve_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click = click_of(body)
    try:
        call = await check_click(
            services,
            ref=click.ref,
            kind="approval",
            action="approve",
            user_id=click.user_id,
            channel=click.channel,
            message_ts=click.message_ts,
        )
        await approve(services, client, call, user_id=click.user_id)
    except ClickRefused as refused:
        await refuse(services, client, refused, user=click.user_id, channel=click.channel, thread_ts=click.thread_ts)
