"""Submitting the answer modal of a question: validate against the resume schema, then resume the tool."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import ResumeDataInvalidError

from ...decisions import ClickRefused, answer, check_click, refuse, tell
from ...services import services_of
from ._form import validated_form


async def handle_answer_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user_id = body["user"]["id"]
    ref = view.get("private_metadata")
    try:
        call = await check_click(services, ref=ref, kind="question", action="answer", user_id=user_id)
    except ClickRefused as refused:
        await ack()
        await refuse(services, client, refused, user=user_id, channel=None)
        return
    schema = call.record.resume_schema or {}
    resume_data, errors = validated_form(schema, view["state"]["values"])
    if errors:
        await ack(response_action="errors", errors=errors)
        return
    await ack()
    try:
        await answer(services, client, call, user_id=user_id, resume_data=resume_data)
    except ClickRefused as refused:
        await refuse(services, client, refused, user=user_id, channel=None)
    except ResumeDataInvalidError as exc:
        await tell(
            client,
            channel=call.row.channel,
            user=user_id,
            thread_ts=call.row.thread_ts,
            text=f"That answer does not fit: {exc}",
        )
