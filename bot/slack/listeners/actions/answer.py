"""The Answer button of a question: opens a form generated from the tool's resume schema."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...modal_builder import build_answer_modal
from ...services import services_of
from ._click import checked_click, open_form


async def handle_answer_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    click, call = await checked_click(services_of(context), client, body, kind="question", action="answer")
    if call is None:
        return
    await open_form(
        client,
        click,
        call,
        schema=call.record.resume_schema,
        build=lambda target, schema: build_answer_modal(target, call.row.args, schema),
        without_form="Answer this question by replying in the thread.",
    )
