"""A submitted form of a waiting call (the answer and edit-arguments modals): the call found again and
the form validated against its schema (errors stay in the modal, nothing is decided), then acked, well
within Slack's 3 seconds: before the ack only the database is read. After the ack the decision rule (which
may ask Slack who is who) and the decision; what goes wrong then is told to the submitter alone, in an
ephemeral message."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import ToolCallRecord

from ...decisions import ClickRefused, DataUnfit, WaitingCall, find_waiting_call, refuse, tell
from ...form_builder import form_errors, read_form
from ...services import SlackServices
from ...translator import Translator

LOOKUP_WITHIN = 2.0
"""Seconds a form's listener looks for its call before it acks anyway (Bolt answers 404 after 3 s)."""


@dataclass(frozen=True, kw_only=True)
class SubmittedForm:
    """A form that passed every check: who submitted it, the call it acts on, and the validated data."""

    user_id: str
    call: WaitingCall
    data: Any


async def submitted_form(
    ack: AsyncAck,
    services: SlackServices,
    client: AsyncWebClient,
    body: dict[str, Any],
    view: dict[str, Any],
    *,
    kind: str,
    action: str,
    schema_of: Callable[[ToolCallRecord], dict[str, Any] | None],
    unfit_text: str,
) -> SubmittedForm | None:
    """Find the call, read its form against `schema_of(record)`, and ack: with the errors when the data
    does not fit (the modal stays open), plainly otherwise. None when there is nothing to settle (a refusal
    is told to the submitter). The rule of who may is the runtime's, asked by the decision after the ack.
    When the call cannot be found within `LOOKUP_WITHIN` seconds (the database slow or away), the form is
    acked first and checked after, and data that does not fit is told to the submitter (`unfit_text`, a
    catalog message id with `{error}`)."""
    user_id = body["user"]["id"]
    lookup = asyncio.ensure_future(find_waiting_call(services, ref=view.get("private_metadata"), kind=kind))
    try:
        async with asyncio.timeout(LOOKUP_WITHIN):
            call = await asyncio.shield(lookup)
    except ClickRefused as refused:
        await ack()
        await refuse(services, client, refused, user=user_id, channel=None)
        return None
    except TimeoutError:  # the database is slow or away: ack now (Bolt answers 404 after 3 s without one)
        await ack()  # the form is recorded (`clicks.py`): checked and carried out once the call is found
        return await _checked_after_the_ack(services, client, lookup, user_id, view, schema_of, unfit_text)
    schema = schema_of(call.record)
    if schema is None:
        await ack()
        return None
    tr = await services.languages.of_person(user_id, within=0.5)  # before the ack: cached, or Slack is quick
    data, errors = _validated_form(schema, view["state"]["values"], tr)
    if errors:
        await ack(response_action="errors", errors=errors)
        return None
    await ack()
    return SubmittedForm(user_id=user_id, call=call, data=data)


async def _checked_after_the_ack(
    services: SlackServices,
    client: AsyncWebClient,
    lookup: asyncio.Future[WaitingCall],
    user_id: str,
    view: dict[str, Any],
    schema_of: Callable[[ToolCallRecord], dict[str, Any] | None],
    unfit_text: str,
) -> SubmittedForm | None:
    """A form acked before its call was found: what does not fit is told to the submitter alone."""
    try:
        call = await lookup
    except ClickRefused as refused:
        await refuse(services, client, refused, user=user_id, channel=None)
        return None
    schema = schema_of(call.record)
    if schema is None:
        return None
    tr = await services.languages.of_person(user_id)
    data, errors = _validated_form(schema, view["state"]["values"], tr)
    if errors:
        text = tr.gettext(unfit_text, error="; ".join(errors.values()))
        await tell(client, channel=call.row.channel, user=user_id, thread_ts=call.row.thread_ts, text=text)
        return None
    return SubmittedForm(user_id=user_id, call=call, data=data)


async def decide_or_tell_submitter(
    services: SlackServices,
    client: AsyncWebClient,
    form: SubmittedForm,
    deciding: Awaitable[None],
    *,
    unfit_text: str,
) -> None:
    """Carry out the decision; when the rule refused it, another click won the race, or the runtime finds
    the data unfit, tell the submitter (`unfit_text`, a catalog message id with `{error}`: why)."""
    try:
        await deciding
    except ClickRefused as refused:
        await refuse(services, client, refused, user=form.user_id, channel=None)
    except DataUnfit as exc:
        call = form.call
        text = (await services.languages.of_person(form.user_id)).gettext(unfit_text, error=str(exc))
        await tell(client, channel=call.row.channel, user=form.user_id, thread_ts=call.row.thread_ts, text=text)


def _validated_form(schema: dict[str, Any], state_values: dict[str, Any], tr: Translator) -> tuple[Any, dict[str, str]]:
    """The form's data, and the errors to show in the modal, per field in plain words of the submitter's
    language (empty when the data fits `schema`)."""
    data, errors = read_form(schema, state_values, tr)
    if errors:
        return data, errors
    return data, form_errors(schema, data, tr)
