"""Submitting the "Decline selected with reason" modal of the App Home: each selected approval is declined
with the reason, as if declined alone."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Decline

from ...bulk import decide_selected
from ...home_builder import read_bulk_decline_modal
from ...modal_builder import read_reason
from ...services import services_of


async def handle_bulk_decline_reason_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    reason = read_reason((view.get("state") or {}).get("values") or {})
    selected = read_bulk_decline_modal(view.get("private_metadata"))
    user_id = (body.get("user") or {}).get("id", "")
    await decide_selected(services_of(context), client, Decline(reason=reason), user_id=user_id, selected=selected)
