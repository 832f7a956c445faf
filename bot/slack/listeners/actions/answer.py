"""The Answer button of a question: opens a form generated from the tool's resume schema."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...decisions import tell
from ...modal_builder import ModalTarget, build_answer_modal
from ...services import services_of
from ._click import checked_click


async def handle_answer_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind="question", action="answer")
    if call is None:
        return
    schema = call.record.resume_schema
    if schema is None:
        await tell(
            client,
            channel=call.row.channel,
            user=click.user_id,
            thread_ts=call.row.thread_ts,
            text="Answer this question by replying in the thread.",
        )
        return
    target = ModalTarget(ref=call.row.id, tool_name=call.row.tool_name)
    await client.views_open(trigger_id=click.trigger_id, view=build_answer_modal(target, call.row.args, schema))
