"""Submitting the decline-with-reason modal."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Decline

from ...decisions import ClickRefused, decide, find_waiting_call, refuse
from ...modal_builder import read_reason
from ...services import services_of


async def handle_decline_reason_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    user_id = body["user"]["id"]
    reason = read_reason(view["state"]["values"])
    try:
        call = await find_waiting_call(services, ref=view.get("private_metadata"), kind="approval")
        await decide(services, client, call, Decline(reason=reason), user_id=user_id)
    except ClickRefused as refused:
        await refuse(services, client, refused, user=user_id, channel=None)
