"""The button under a question too long for its message: a modal with the whole of it, in the clicker's
language. It decides nothing, so anyone who sees the message may open it; the reference must be one the
clicked message carries, in the channel of its call (or a recorded copy of it), or nothing opens."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from ...modal_builder import build_question_modal
from ...question_builder import question_of
from ...services import services_of
from ._click import click_of, open_modal


async def handle_show_question_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    click = click_of(body)
    row = await services.stores.messages.get(click.ref or "")
    if row is None or row.kind != "question" or not click.carried or click.channel is None:
        return
    if row.channel != click.channel and not (
        click.message_ts and await services.stores.messages.is_copy_elsewhere(row.id, click.channel, click.message_ts)
    ):
        return
    tr = await services.languages.of_person(click.user_id)
    await open_modal(services, client, click.trigger_id, build_question_modal(row.tool_name, question_of(row.args), tr))
