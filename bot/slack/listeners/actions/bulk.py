"""The App Home's bulk decisions: the checkbox next to each waiting approval, "Approve selected" and
"Decline selected"."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve, Decline

from ...bulk import decide_selected, selection_of
from ...services import services_of


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
