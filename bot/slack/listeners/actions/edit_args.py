"""The Edit arguments button: opens a form generated from the tool's input schema."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...modal_builder import build_edit_args_modal
from ...services import services_of
from ._click import checked_click, open_form


async def handle_edit_args_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    click, call = await checked_click(services_of(context), client, body, kind="approval", action="edit_args")
    if call is None:
        return
    await open_form(
        client,
        click,
        call,
        schema=call.record.input_schema,
        build=lambda target, schema: build_edit_args_modal(target, schema, call.row.args),
        without_form=f"The arguments of `{call.row.tool_name}` cannot be edited here; approve or decline it.",
    )
