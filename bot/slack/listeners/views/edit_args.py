"""Submitting the edit-arguments modal: validate against the tool's input schema (errors stay in the
modal, nothing runs), then approve the edited arguments."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Approve

from ...decisions import decide
from ...services import services_of
from ...translator import N_
from ._form import decide_or_tell_submitter, submitted_form

UNFIT = N_("Nothing was approved: {error}")
"""What the submitter is told when the data does not fit (a catalog message id)."""


async def handle_edit_args_submission(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    services = services_of(context)
    form = await submitted_form(
        ack,
        services,
        client,
        body,
        view,
        kind="approval",
        action="edit_args",
        schema_of=lambda record: record.input_schema,
        unfit_text=UNFIT,
    )
    if form is None:
        return
    await decide_or_tell_submitter(
        services,
        client,
        form,
        decide(services, client, form.call, Approve(args=form.data), user_id=form.user_id),
        unfit_text=UNFIT,
    )
