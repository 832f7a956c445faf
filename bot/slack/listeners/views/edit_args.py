"""Submitting the edit-arguments modal: validate against the tool's input schema (errors stay in the
modal, nothing runs), then approve the edited arguments."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import ToolArgsInvalidError

from ...decisions import ClickRefused, approve, check_click, refuse, tell
from ...services import services_of
from ._form import validated_form


async def handle_edit_args_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user_id = body["user"]["id"]
    try:
        call = await check_click(
            services, ref=view.get("private_metadata"), kind="approval", action="edit_args", user_id=user_id
        )
    except ClickRefused as refused:
        await ack()
        await refuse(services, client, refused, user=user_id, channel=None)
        return
    schema = call.record.input_schema
    if schema is None:
        await ack()
        return
    args, errors = validated_form(schema, view["state"]["values"])
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await ack()
    try:
        await approve(services, client, call, user_id=user_id, args=args)
    except ClickRefused as refused:
        await refuse(services, client, refused, user=user_id, channel=None)
    except ToolArgsInvalidError as exc:
        await tell(
            client,
            channel=call.row.channel,
            user=user_id,
            thread_ts=call.row.thread_ts,
            text=f"Nothing was approved: {exc}",
        )
