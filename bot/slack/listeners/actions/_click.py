"""What a button click says, read from a block_actions payload (and trusted no further than that)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Decision, ToolCallRecord

from ...decisions import (
    UNKNOWN,
    ClickRefused,
    RefusalReason,
    WaitingCall,
    check_decider,
    decide,
    find_waiting_call,
    refuse,
    tell,
)
from ...intake import CLICK
from ...modal_builder import ModalTarget
from ...posting import carries
from ...question_builder import build_question_blocks
from ...services import SlackServices, services_of
from ...translator import DEFAULT_LANGUAGE, N_, Translator, translator
from ...waiting_messages import question_view_of


@dataclass(frozen=True, kw_only=True)
class Click:
    user_id: str
    channel: str | None
    message_ts: str | None
    thread_ts: str | None
    ref: str | None
    """The button's value: an opaque reference, checked before use."""
    action_id: str | None
    """Which button: one the call's message does not show now is forged (`shown`)."""
    trigger_id: str | None
    carried: bool
    """Whether the clicked message's buttons carry `ref` (a value that is not on the message is forged)."""
    via: str = "button"
    """`home` for a click in the App Home, `button` for one in a thread (for the audit trail)."""


def click_of(body: dict[str, Any]) -> Click:
    container = body.get("container") or {}
    message = body.get("message") or {}
    actions = body.get("actions") or [{}]
    return Click(
        user_id=(body.get("user") or {}).get("id", ""),
        channel=(body.get("channel") or {}).get("id") or container.get("channel_id"),
        message_ts=container.get("message_ts") or message.get("ts"),
        thread_ts=message.get("thread_ts") or container.get("thread_ts"),
        ref=actions[0].get("value"),
        action_id=actions[0].get("action_id"),
        trigger_id=body.get("trigger_id"),
        carried=carries(message, actions[0].get("value") or ""),
        via="home" if container.get("type") == "view" else "button",
    )


async def checked_click(
    services: SlackServices, client: AsyncWebClient, body: dict[str, Any], *, kind: str, action: str | None
) -> tuple[Click, WaitingCall | None]:
    """The click and the waiting call it acts on, which the runtime's rule lets the clicker `action` (None:
    the decision itself asks the rule); a refused click is explained to the clicker alone (and gives no
    call)."""
    click = click_of(body)
    try:
        call = await find_waiting_call(
            services, ref=click.ref, kind=kind, channel=click.channel, message_ts=click.message_ts,
            thread_ts=click.thread_ts, carried=click.carried,
        )  # fmt: skip
        if action is not None:
            await check_decider(services, call, action=action, user_id=click.user_id, via=click.via)
        if not shown(call, click.action_id):
            raise ClickRefused(UNKNOWN, RefusalReason.UNKNOWN, about=call.row)
    except ClickRefused as refused:
        await explain(services, client, click, refused)
        return click, None
    return click, call


def shown(call: WaitingCall, action_id: str | None) -> bool:
    """Whether the message of `call` shows the button `action_id` now. A question's buttons depend on
    the call (Decline and Cancel on a live question only, a link on a page's), so a forged one would
    reach the runtime with an answer the question cannot take; an approval's buttons that the policy
    may not offer (a standing grant, an edit) are refused, with a word, where they are decided."""
    if call.row.kind != "question":
        return True
    view = question_view_of(call.row, answerable_by_form=call.record.resume_schema is not None, record=call.record)
    blocks = [block.to_dict() for block in build_question_blocks(view, translator(DEFAULT_LANGUAGE))]
    return action_id in {element.get("action_id") for block in blocks for element in block.get("elements") or ()}


async def decide_clicked(
    ack: AsyncAck,
    body: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
    decision: Decision,
    *,
    kind: str,
    action: str,
) -> None:
    """What a button that decides does: ack, find the click's call (`kind` of wait), make `decision` about
    it through the runtime (which asks the rule of who may) and show it. A refused click, or one that lost
    the race to another, is explained to the clicker alone. (`action` names the button for readers; the
    runtime reads the action from the decision.)"""
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind=kind, action=None)
    if call is None:
        return
    try:
        await decide(
            services, client, call, decision, user_id=click.user_id, via=click.via, click_id=context.get(CLICK)
        )
    except ClickRefused as refused:
        await explain(services, client, click, refused)


async def explain(services: SlackServices, client: AsyncWebClient, click: Click, refused: ClickRefused) -> None:
    await refuse(
        services, client, refused, user=click.user_id, channel=click.channel, thread_ts=click.thread_ts,
        home=click.via == "home",
    )  # fmt: skip


async def open_clicked_form(
    ack: AsyncAck,
    body: dict[str, Any],
    client: AsyncWebClient,
    context: AsyncBoltContext,
    *,
    kind: str,
    action: str,
    schema_of: Callable[[ToolCallRecord], dict[str, Any] | None],
    build: Callable[[ModalTarget, Any, dict[str, Any], Translator], Any],
    without_form: str,
) -> None:
    """What a button that opens a form does: ack, check the click as `decide_clicked` does, then open the
    modal `build(target, the call's arguments, schema, the clicker's words)` for the schema `schema_of`
    gives; without one to build a form from, tell the clicker `without_form` (a catalog's message id;
    `{tool}`: the tool's name) instead. Nothing is decided until the form is submitted."""
    await ack()
    services = services_of(context)
    click, call = await checked_click(services, client, body, kind=kind, action=action)
    if call is None:
        return
    tr = await services.languages.of_person(click.user_id)
    schema = schema_of(call.record)
    if schema is None:
        text = tr.gettext(without_form, tool=f"`{call.row.tool_name}`")
        await tell(client, channel=call.row.channel, user=click.user_id, thread_ts=call.row.thread_ts, text=text)
        return
    target = ModalTarget(ref=call.row.id, tool_name=call.row.tool_name)
    await open_modal_in_thread(services_of(context), client, click, call, build(target, call.row.args, schema, tr))


NOT_OPENED = N_("Slack did not open the form (the click came too late, or not from Slack); click the button again.")


async def open_modal(services: SlackServices, client: AsyncWebClient, trigger_id: str | None, view: Any) -> bool:
    """Open `view` for the clicker; False when Slack refuses the trigger (expired after its 3 seconds, or
    forged), logged in one line: the caller tells the clicker (`NOT_OPENED`)."""
    try:
        await client.views_open(trigger_id=trigger_id, view=view)
    except SlackApiError as exc:
        data = exc.response.data if exc.response is not None else None
        services.logger.warning("views.open refused: %s", data.get("error") if isinstance(data, dict) else exc)
        return False
    return True


async def open_modal_in_thread(
    services: SlackServices, client: AsyncWebClient, click: Click, call: WaitingCall, view: Any
) -> None:
    """`open_modal` for a click on a call's message; a refusal is told to the clicker in its thread."""
    if not await open_modal(services, client, click.trigger_id, view):
        row = call.row
        text = (await services.languages.of_person(click.user_id)).gettext(NOT_OPENED)
        await tell(client, channel=row.channel, user=click.user_id, thread_ts=row.thread_ts, text=text)
