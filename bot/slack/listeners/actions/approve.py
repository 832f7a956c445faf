"""The Approve button, and the two that approve and give a standing grant."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve, GrantRequest

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


async def handle_approve_and_grant_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    """Approve and allow the tool in this thread for the policy's grant time (any arguments)."""
    await _approve_and_grant(ack, body, client, context, same_arguments=False)


async def handle_approve_and_grant_same_args_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    """Approve and allow later calls with exactly these arguments in this thread for the policy's grant time."""
    await _approve_and_grant(ack, body, client, context, same_arguments=True)


async def _approve_and_grant(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext, *, same_arguments: bool
) -> None:
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind="approval", action="approve")
    if call is not None:
        decision = Approve(grant=GrantRequest(same_arguments=same_arguments))
        await decide_or_tell_clicker(
            services, client, click, decide(services, client, call, decision, user_id=click.user_id, via=click.via)
        )
