"""The App Home's bulk decisions: the checkbox next to each waiting approval, "Approve selected" and
"Decline selected" (and "Decline selected with reason", which opens a modal for the reason)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve, Decline

from ...bulk import NOTHING_SELECTED, decide_selected, selection_of
from ...home_builder import build_bulk_decline_modal
from ...services import services_of
from ._click import NOT_OPENED, open_modal


async def handle_bulk_pick(ack: AsyncAck) -> None:
    """Ticking a checkbox decides nothing: the selection is read from the view's state when a button is pressed."""
    await ack()


async def handle_bulk_approve_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    user_id = (body.get("user") or {}).get("id", "")
    await decide_selected(services_of(context), client, Approve(), user_id=user_id, selected=selection_of(body))


async def handle_bulk_decline_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    user_id = (body.get("user") or {}).get("id", "")
    await decide_selected(services_of(context), client, Decline(), user_id=user_id, selected=selection_of(body))


async def handle_bulk_decline_with_reason_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    """Open the modal that asks one reason for every selected approval (nothing is decided yet)."""
    await ack()
    services = services_of(context)
    user_id = (body.get("user") or {}).get("id", "")
    selected = selection_of(body)
    tr = await services.languages.of_person(user_id)
    if not selected:
        if services.home is not None:
            await services.home.show_bulk_result(user_id, tr.gettext(NOTHING_SELECTED))
        return
    opened = await open_modal(services, client, body.get("trigger_id"), build_bulk_decline_modal(selected, tr))
    if not opened and services.home is not None:
        await services.home.show_bulk_result(user_id, tr.gettext(NOT_OPENED))
