"""The Decline button, Decline with reason (which opens a modal for the reason), and Cancel."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Cancel, Decline

from ...modal_builder import ModalTarget, build_decline_reason_modal
from ...services import services_of
from ._click import checked_click, decide_clicked, open_modal_in_thread


async def handle_decline_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await decide_clicked(ack, body, client, context, Decline(), kind="approval", action="decline")


async def handle_cancel_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    """Withdraw a waiting approval (in its thread or the App Home): cancelled, not declined."""
    await decide_clicked(ack, body, client, context, Cancel(), kind="approval", action="cancel")


async def handle_decline_with_reason_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind="approval", action="decline")
    if call is None:
        return
    target = ModalTarget(ref=call.row.id, tool_name=call.row.tool_name)
    tr = await services.languages.of_person(click.user_id)
    await open_modal_in_thread(services, client, click, call, build_decline_reason_modal(target, call.row.args, tr))
