"""The Edit arguments button: opens a form generated from the tool's input schema."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...decisions import tell
from ...modal_builder import ModalTarget, build_edit_args_modal
from ...services import services_of
from ._click import checked_click


async def handle_edit_args_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind="approval", action="edit_args")
    if call is None:
        return
    schema = call.record.input_schema
    if schema is None:
        await tell(
            client,
            channel=call.row.channel,
            user=click.user_id,
            thread_ts=call.row.thread_ts,
            text=f"The arguments of `{call.row.tool_name}` cannot be edited here; approve or decline it.",
        )
        return
    target = ModalTarget(ref=call.row.id, tool_name=call.row.tool_name)
    await client.views_open(trigger_id=click.trigger_id, view=build_edit_args_modal(target, schema, call.row.args))
