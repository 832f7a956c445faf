"""The Decline button, and Decline with reason (which opens a modal for the reason)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...decisions import ClickRefused, check_click, decline, refuse
from ...modal_builder import ModalTarget, build_decline_reason_modal
from ...services import services_of
from ._click import click_of


async def handle_decline_button(
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
            action="decline",
            user_id=click.user_id,
            channel=click.channel,
            message_ts=click.message_ts,
        )
        await decline(services, client, call, user_id=click.user_id)
    except ClickRefused as refused:
        await refuse(services, client, refused, user=click.user_id, channel=click.channel, thread_ts=click.thread_ts)


async def handle_decline_with_reason_button(
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
            action="decline",
            user_id=click.user_id,
            channel=click.channel,
            message_ts=click.message_ts,
        )
    except ClickRefused as refused:
        await refuse(services, client, refused, user=click.user_id, channel=click.channel, thread_ts=click.thread_ts)
        return
    target = ModalTarget(ref=call.row.id, tool_name=call.row.tool_name)
    await client.views_open(trigger_id=click.trigger_id, view=build_decline_reason_modal(target, call.row.args))
