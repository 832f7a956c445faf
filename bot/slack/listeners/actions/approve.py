"""The Approve button, and the two that approve and give a standing grant."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve, GrantRequest

from ._click import decide_clicked


async def handle_approve_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await decide_clicked(ack, body, client, context, Approve(), kind="approval", action="approve")


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
    decision = Approve(grant=GrantRequest(same_arguments=same_arguments))
    await decide_clicked(ack, body, client, context, decision, kind="approval", action="approve")
