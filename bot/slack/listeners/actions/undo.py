"""The Undo button under a call that ran: undone through the runtime (`Agent.undo_as`), once."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...services import services_of
from ...undo import undo_clicked
from ._click import click_of


async def handle_undo_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    click = click_of(body)
    await undo_clicked(
        services_of(context), client, ref=click.ref or "", user_id=click.user_id, channel=click.channel, via=click.via
    )
