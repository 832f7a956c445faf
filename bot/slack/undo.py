"""Undo in Slack: once an approved call ran, its message offers *Undo* while its tool policy's window is
open (its tool must declare how: `undo=`); a click undoes it through the runtime (`Agent.undo_as`, which
asks the rule and lets one click on any replica win, once), the message and the thread say what came of
it, and a refused or late click is told to the clicker alone."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, ContextBlock, MarkdownTextObject
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import CannotUndo, NotUndoable, Refused, UndoFailed, Undone

from .mrkdwn import escape, slack_date
from .permissions import refusal_text
from .services import SlackServices
from .stores.waiting_call_messages import ShownMessage
from .tables import ToolCallMessageRow
from .translator import N_, Translator
from .waiting_messages import _settled_approval, _words_of_reader, record_of

UNDO = "tool_undo"
UNDO_BLOCK_ID = "tool_call_undo"

NO_UNDO = N_("This call cannot be undone.")
TOO_LATE = N_("Too late to undo: the undo window of this call has ended.")
ALREADY_UNDONE = N_("This call was already undone.")
NOT_RUN = N_("This call did not run, so there is nothing to undo.")
_NOT_UNDONE = {
    NotUndoable.NO_UNDO: NO_UNDO,
    NotUndoable.TOO_LATE: TOO_LATE,
    NotUndoable.ALREADY_UNDONE: ALREADY_UNDONE,
    NotUndoable.NOT_RUN: NOT_RUN,
}


def undo_blocks(ref: str, until: datetime, tr: Translator) -> list[Block]:
    """The Undo button under a call that ran, and until when it may be used."""
    line = tr.gettext("You can undo this until {date} (whoever approved it, or an admin).", date=slack_date(until))
    return [
        ContextBlock(elements=[MarkdownTextObject(text=line)]),
        ActionsBlock(
            block_id=UNDO_BLOCK_ID, elements=[ButtonElement(text=tr.gettext("Undo"), action_id=UNDO, value=ref)]
        ),
    ]


def undone_line(undone: Undone | UndoFailed, tr: Translator) -> str:
    """What the message and the thread say of an undo."""
    who = f"<@{undone.undone_by}>" if undone.undone_by else tr.gettext("the bot")
    if isinstance(undone, UndoFailed):
        return ":warning: " + tr.gettext(
            "{user} tried to undo {tool}, and the undo failed: {error}. Its effect may still stand.",
            user=who, tool=f"`{escape(undone.tool_name)}`", error=escape(undone.error[:300]),
        )  # fmt: skip
    return ":leftwards_arrow_with_hook: " + tr.gettext(
        "Undone by {user} on {date}: {tool} was taken back.",
        user=who, date=slack_date(undone.undone_at), tool=f"`{escape(undone.tool_name)}`",
    )  # fmt: skip


async def offer_undo(
    services: SlackServices,
    client: AsyncWebClient,
    run_id: str,
    tool_call_id: str,
    *,
    messages: list[tuple[ToolCallMessageRow, list[ShownMessage]]] | None = None,
) -> None:
    """Show Undo on the messages of a call that just ran, if it may be undone (its tool declares how, its
    policy's window is open, nobody undid it). `messages`: the call's, as the caller read them since it ran
    (`shown_of_call`; read here when not given, or when a search of the thread may have found more)."""
    offer = await services.agent.undo_offer(run_id, tool_call_id)  # the call read once, for every message
    if offer is None:
        return
    record, until = offer
    if messages is None or any(row.maybe_copies for row, _ in messages):
        messages = await services.stores.messages.shown_of_call(run_id, tool_call_id)
    for row, shown in messages:
        if row.kind != "approval":
            continue
        extra = lambda tr, ref=row.id, end=until: undo_blocks(ref, end, tr)  # noqa: E731
        await _show(services, client, row, record, extra=extra, shown=shown)


async def _show(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    record: Any,
    *,
    extra: Any,
    shown: list[ShownMessage] | None = None,
) -> None:
    """Show the settled approval of `row` on every message of its call (`shown`: those, as the caller read them)."""
    if shown is None:
        shown = await services.stores.messages.every_message(row)
    for channel, ts, escalated_to in shown:
        tr = await _words_of_reader(services, row, escalated_to)
        text, blocks = _settled_approval(row, record, tr)
        try:
            await client.chat_update(channel=channel, ts=ts, text=text, blocks=[*blocks, *extra(tr)])
        except SlackApiError as exc:
            if exc.response.get("error") != "message_not_found":
                services.logger.warning("could not update the message of %s/%s", row.run_id, row.tool_call_id)


async def undo_clicked(
    services: SlackServices, client: AsyncWebClient, *, ref: str, user_id: str, channel: str | None, via: str
) -> None:
    """Undo the call of the message `ref` names for `user_id`, and show what came of it."""
    row = await services.stores.messages.get(ref)
    if row is None or row.kind != "approval" or (channel is not None and channel != row.channel and via != "home"):
        tr = await services.languages.of_person(user_id)
        if channel:
            await client.chat_postEphemeral(channel=channel, user=user_id, text=tr.gettext(NO_UNDO))
        return
    result = await services.agent.undo_as(row.run_id, row.tool_call_id, actor=user_id, via=via)
    if isinstance(result, Refused | CannotUndo):
        tr = await services.languages.of_person(user_id)
        if isinstance(result, Refused):
            text = refusal_text(result.refusal, tr)
        else:
            text = tr.gettext(_NOT_UNDONE[result.reason])
        await client.chat_postEphemeral(channel=row.channel, user=user_id, text=text, thread_ts=row.thread_ts)
        if isinstance(result, CannotUndo) and result.reason in (NotUndoable.TOO_LATE, NotUndoable.NO_UNDO):
            record = await record_of(services, row)  # the button goes: it cannot be used any more
            await _show(services, client, row, record, extra=lambda tr: [])
        return
    if not isinstance(result, Undone | UndoFailed):
        return
    record = await record_of(services, row)

    def said(tr: Translator) -> list[Block]:
        return [ContextBlock(elements=[MarkdownTextObject(text=undone_line(result, tr))])]

    await _show(services, client, row, record, extra=said)
    tr = await services.languages.of_thread(row.thread_id, row.requester)
    await client.chat_postMessage(channel=row.channel, thread_ts=row.thread_ts, text=undone_line(result, tr))
