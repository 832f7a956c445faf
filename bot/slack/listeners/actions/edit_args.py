"""The Edit arguments button: opens a form generated from the tool's input schema."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...modal_builder import build_edit_args_modal
from ...translator import N_
from ._click import open_clicked_form


async def handle_edit_args_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await open_clicked_form(
        ack, body, client, context, kind="approval", action="edit_args",
        schema_of=lambda record: record.input_schema,
        build=lambda target, args, schema, tr: build_edit_args_modal(target, schema, args, tr),
        without_form=N_("The arguments of {tool} cannot be edited here; approve or decline it."),
    )  # fmt: skip
