"""The Slack messages that show a waiting tool call: post them (approval or question), and update them
in place once the call no longer waits, whoever settled it (a click, the thread, the HTTP API).

Each message is recorded (`ToolCallMessageRow`) before it is posted; the record's id is the opaque
reference its buttons carry. A message in a thread is in the conversation's language (its starter's,
`reader_language`), whoever's click brings it up to date.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from typing import Any, cast

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.agent import (
    Action,
    Chunk,
    DecisionKind,
    ToolCallRecord,
    WaitingCallPayload,
    WaitingCallView,
    offered_actions,
)

from .approval_builder import (
    ApprovalView,
    DecisionView,
    PreviewView,
    approval_text,
    build_approval_blocks,
    build_closed_approval_blocks,
    build_decided_approval_blocks,
    decided_text,
)
from .directory import is_user_id
from .permissions import people_in
from .posting import UNCLEAR, adopt_escalation_copies, deliver, find_copies
from .question_builder import (
    AnswerView,
    QuestionView,
    build_answered_question_blocks,
    build_question_blocks,
    question_text,
)
from .services import SlackServices, home_changed
from .stores.waiting_call_messages import ShownMessage
from .tables import ToolCallMessageRow
from .threads import SlackThread
from .translator import Translator


class Unread:
    """Not read yet by the caller (a view it did not read, as opposed to None: read, and no call waits)."""


UNREAD = Unread()


async def post_waiting_call(
    services: SlackServices,
    client: AsyncWebClient,
    chunk: Chunk,
    *,
    run_id: str,
    thread: SlackThread,
    requester: str,
    request_text: str | None,
) -> ToolCallMessageRow:
    """Post the message of the call a chunk shows waiting: an approval for `tool-call-approval` (an
    interrupted call's says so), what the tool asks, with an Answer button, for `tool-call-suspended`."""
    payload = cast(WaitingCallPayload, chunk.payload)  # a tool-call-approval or tool-call-suspended chunk's
    # The call as its message shows it: as the runtime parked it a moment ago (the chunk's view), else read
    # once (None: it no longer waits, and its record alone is read). A decision that lands before the post
    # is met by the read after it (`post_recorded`), which brings the message up to date.
    shown = chunk.view
    if shown is None or (shown.record.run_id, shown.record.tool_call_id) != (run_id, payload["tool_call_id"]):
        shown = await services.agent.waiting_call_view(run_id, payload["tool_call_id"])
    record = shown.record if shown is not None else await services.agent.get_tool_call(run_id, payload["tool_call_id"])
    if chunk.type == "tool-call-approval":
        kind, args, answerable_by_form = "approval", payload.get("args"), None
        interrupted = bool(payload.get("interrupted", False)) or (record is not None and record.interrupted)
    else:  # a question: its row keeps what the tool asked
        kind, args, interrupted, request_text = "question", payload.get("suspend_payload"), False, None
        answerable_by_form = payload.get("resume_schema") is not None
    if interrupted:  # the message of the call's earlier wait shows how that one was decided
        await refresh_tool_call_messages(services, client, run_id, payload["tool_call_id"])
    claimed_at = services.agent.storage.clock.now()  # the claim the record takes is no older than this
    row, mine, inserted = await services.stores.messages.record(
        kind=kind,
        run_id=run_id,
        tool_call_id=payload["tool_call_id"],
        tool_name=payload["tool_name"],
        args=args,
        thread=thread,
        requester=requester,
        request_text=request_text,
        waiting_since=record.suspended_at if record is not None else None,
        interrupted=interrupted,
    )
    if mine:
        await post_recorded(
            services, client, row, record, answerable_by_form=answerable_by_form, shown=shown,
            claimed_at=claimed_at if inserted else None,
        )  # fmt: skip
    return row


async def post_recorded(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    record: ToolCallRecord | None,
    *,
    answerable_by_form: bool | None = None,
    search_first: bool = False,
    shown: WaitingCallView | None | Unread = UNREAD,
    claimed_at: datetime | None = None,
) -> str | None:
    """Post the message of a recorded row whose posting the caller has claimed; its ts, or None when it
    could not be posted now (the thread is told, if Slack lets us, and the recovery pass posts it later).
    `shown`: the runtime's view of the call as the caller just read it, or as the runtime parked it (read
    here when not given); `claimed_at`: the caller's own INSERT of `row` took the claim a moment ago
    (`posting.deliver`)."""
    if row.kind == "approval":
        tr = await services.languages.of_thread(row.thread_id, row.requester)
        view = await waiting_approval_view(services, row, record, tr, shown=shown)
        text, blocks = approval_text(view, tr), build_approval_blocks(view, tr)
        approvals_shown = view.approvals
    else:
        approvals_shown = ()
        if answerable_by_form is None:
            answerable_by_form = record is not None and record.resume_schema is not None
        question = await waiting_question_view(
            services, row, record, answerable_by_form=answerable_by_form, shown=shown
        )
        tr = await services.languages.of_thread(row.thread_id, row.requester)
        text, blocks = question_text(question, tr), build_question_blocks(question, tr)
    ts = await deliver(
        services, client, row, text=text, blocks=blocks, search_first=search_first, claimed_at=claimed_at
    )
    if row.kind == "approval":
        home_changed(services)
    if ts is None and not search_first and await services.stores.messages.holds_post(row):
        await _say_not_posted_yet(services, client, row)
    if ts is None:
        return ts
    after = await record_of(services, row)
    if not still_waits(row, after) or (after is not None and after.approvals != approvals_shown):
        # decided while the post was on its way (this process stalled between its checks and Slack's
        # answer): the copy that landed shows the decision at once, never live buttons; or, four eyes,
        # approved once more since the call was read: every copy shows who approved so far
        try:
            await refresh_message(services, client, row, record=after)
        except (SlackApiError, *UNCLEAR) as exc:  # left open: the recovery pass updates it
            services.logger.warning("could not update the late message of %s/%s: %r", row.run_id, row.tool_call_id, exc)
    return ts


async def _say_not_posted_yet(services: SlackServices, client: AsyncWebClient, row: ToolCallMessageRow) -> None:
    tr = await services.languages.of_thread(row.thread_id, row.requester)
    tool = f"`{row.tool_name}`"
    if row.kind == "approval":
        said = tr.gettext(
            "I need approval to run {tool}, but Slack did not take the request; I will post it here again shortly.",
            tool=tool,
        )
    else:
        said = tr.gettext(
            "I need an answer for {tool}, but Slack did not take the request; I will post it here again shortly.",
            tool=tool,
        )
    try:
        await client.chat_postMessage(channel=row.channel, thread_ts=row.thread_ts, text=f":hourglass: {said}")
    except SlackApiError:
        services.logger.warning("could not tell %s that its message is not posted yet", row.thread_id)
    except UNCLEAR:
        services.logger.warning("could not tell %s that its message is not posted yet", row.thread_id)


async def waiting_approval_view(
    services: SlackServices,
    row: ToolCallMessageRow,
    record: ToolCallRecord | None,
    tr: Translator,
    *,
    viewer: str | None = None,
    shown: WaitingCallView | None | Unread = UNREAD,
) -> ApprovalView:
    """The approval message of `row`, rendered from the runtime's one view of the waiting call
    (`Agent.waiting_call_view`): its arguments and preview, who asked, the approvals so far, who may decide
    (in the words of `tr`) and until when, the grants on offer, and the buttons the rule allows: the
    `viewer`'s, for a copy one person reads (a DM); anyone's for a message many read (`viewer` None).
    A call that no longer waits gets no buttons (its message is brought up to date next). `shown`: that view
    as the caller just read it (read here when not given)."""
    if isinstance(shown, Unread):
        shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)
    if shown is None:
        return dataclasses.replace(approval_view_of(row, record), actions=frozenset())
    if viewer is None:
        actions = await offered_actions(shown)
    else:
        actions = await services.agent.actions_for(shown, viewer)
    return approval_view_from(row, shown, actions, tr)


def who_may_decide(shown: WaitingCallView, requester: str, tr: Translator) -> str:
    """Who may decide the call of `shown`, in mrkdwn and the words of `tr`, with the self-approval rule."""
    who = people_in(shown.deciders, tr)
    if not shown.self_approval:
        who = tr.gettext("{who} (not {requester}, who asked)", who=who, requester=f"<@{requester}>")
    return who


def approval_view_from(
    row: ToolCallMessageRow, shown: WaitingCallView, actions: frozenset[Action], tr: Translator
) -> ApprovalView:
    """`ApprovalView` of the runtime's `WaitingCallView` (see `waiting_approval_view`)."""
    return dataclasses.replace(
        approval_view_of(row, shown.record),
        who_may_approve=who_may_decide(shown, row.requester, tr),
        expires_at=shown.expires_at,
        approvals_required=shown.approvals_required,
        approvals=shown.approvals,
        grant_seconds=shown.grant_seconds,
        actions=frozenset(str(action) for action in actions),
    )


def approval_view_of(row: ToolCallMessageRow, record: ToolCallRecord | None, args: Any = None) -> ApprovalView:
    return ApprovalView(
        ref=row.id,
        tool_name=row.tool_name,
        description=record.description if record is not None else "",
        title=record.tool_title if record is not None else None,
        source=record.tool_source if record is not None else None,
        hints=record.tool_hints if record is not None else (),
        args=row.args if args is None else args,
        requester=row.requester,
        request_text=row.request_text,
        interrupted=row.interrupted,
        preview=preview_view_of(record),
        rule=record.rule if record is not None else None,
        rule_fields=record.rule_fields if record is not None else None,
        approvals=record.approvals if record is not None else (),
        stood_in_for=record.stood_in_for if record is not None else (),
    )


def preview_view_of(record: ToolCallRecord | None) -> PreviewView | None:
    """The approval's preview as the runtime stored it with the call (None: its tool has none)."""
    preview = record.preview if record is not None else None
    if preview is None:
        return None
    if not preview.ok:
        return PreviewView(ok=False, text=preview.error or "")  # the builder says it failed
    result = preview.result
    text = result if isinstance(result, str) else json.dumps(result, indent=2, ensure_ascii=False, default=str)
    return PreviewView(ok=True, text=text)


async def waiting_question_view(
    services: SlackServices,
    row: ToolCallMessageRow,
    record: ToolCallRecord | None,
    *,
    answerable_by_form: bool,
    shown: WaitingCallView | None | Unread = UNREAD,
) -> QuestionView:
    """The question message of `row`, with the buttons the rule offers someone on the runtime's one view of
    the call (`offered_actions`): Answer (with a form, when the tool says what data it takes), and Decline
    and Cancel of a live question; none once the call no longer waits. `shown`: that view as the caller
    just read it (read here when not given)."""
    question = question_view_of(row, answerable_by_form=answerable_by_form, record=record)
    if isinstance(shown, Unread):
        shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)
    offered = await offered_actions(shown) if shown is not None else frozenset()
    return dataclasses.replace(
        question,
        answerable_by_form=answerable_by_form and Action.ANSWER in offered,
        declinable=question.declinable and Action.CANCEL in offered,
    )


def question_view_of(
    row: ToolCallMessageRow, *, answerable_by_form: bool = True, record: ToolCallRecord | None = None
) -> QuestionView:
    live = record is not None and record.live_question
    url = row.args.get("url") if live and isinstance(row.args, dict) else None
    return QuestionView(
        ref=row.id,
        tool_name=row.tool_name,
        suspend_payload=row.args,
        requester=row.requester,
        answerable_by_form=answerable_by_form,
        declinable=live,
        url=url if isinstance(url, str) and url.startswith(("https://", "http://")) else None,
    )


async def record_of(services: SlackServices, row: ToolCallMessageRow) -> ToolCallRecord | None:
    """The runtime's record of the message's call, or None if the run is gone."""
    return await services.agent.get_tool_call(row.run_id, row.tool_call_id)


def still_waits(row: ToolCallMessageRow, record: ToolCallRecord | None) -> bool:
    """Whether the call waits, in the very wait the message shows (not a later one): for a decision or
    for an answer, as the message asks."""
    wanted = DecisionKind.RESUME if row.kind == "question" else DecisionKind.APPROVE
    if record is None or not record.waits_for(wanted):
        return False
    since = record.suspended_at
    return row.waiting_since is None or since is None or row.waiting_since == since


async def refresh_message(
    services: SlackServices,
    client: AsyncWebClient,
    row: ToolCallMessageRow,
    *,
    answered_by: str | None = None,
    resume_data: Any = None,
    record: ToolCallRecord | None = None,
    shown: list[ShownMessage] | None = None,
    click_id: str | None = None,
) -> bool:
    """Update the message of `row` in place if its call no longer waits: no buttons, the outcome, who, when.

    Every message known to show the call is updated (copies too; the thread is searched for unrecorded
    ones when a post may have left some). Returns False (and changes nothing) while the call still
    waits, or before any message is posted. `record`: the call as a decision just left it (read when
    not given); `shown`: every message known to show it, as read since the call was settled (read when not
    given, and again after a search of the thread); `click_id`: the recorded click that settled it, marked
    done with the message's close (in one statement: its work is done once the message shows it).
    """
    record = record or await record_of(services, row)
    if still_waits(row, record):
        if row.kind == "approval" and record is not None and record.approvals:
            await _show_approvals_so_far(services, client, row, record)
        return False
    if row.maybe_copies:
        await find_copies(services, client, row)
        await adopt_escalation_copies(services, client, row.id)
        shown = None  # the search may have recorded more
    if shown is None:
        shown = await services.stores.messages.every_message(row)  # read with its ts now (a copy may be newer)
    if not shown:
        return False
    refused = record.outcome if record is not None and record.outcome in ("declined", "cancelled", "expired") else None
    answer = AnswerView(
        answered_by=answered_by,
        answered_at=record.decided_at if (answered_by or refused) and record is not None else None,
        resume_data=resume_data if resume_data is not None or record is None else record.resume_data,
        refused=refused,
        refused_by=record.decided_by if refused and record is not None else None,
        live=record is None or record.decision in (DecisionKind.DECLINE_QUESTION, DecisionKind.CANCEL_QUESTION),
    )

    def settled(tr: Translator) -> tuple[str, list]:
        if row.kind == "approval":
            return _settled_approval(row, record, tr)
        if refused == "expired":
            text = tr.gettext("Expired: {tool}", tool=row.tool_name)
        else:
            text = tr.gettext("Answered: {tool}", tool=row.tool_name)
        return text, build_answered_question_blocks(question_view_of(row), answer, tr)

    failures = []
    in_words: dict[str, tuple[str, list]] = {}
    for channel, ts, escalated_to in shown:
        tr = await _words_of_reader(services, row, escalated_to)
        text, blocks = in_words.setdefault(tr.language, settled(tr))
        try:
            await client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
        except SlackApiError as exc:
            if exc.response.get("error") != "message_not_found":  # a copy someone deleted needs no update
                failures.append(exc)
    if failures:
        raise failures[0]
    click_done = services.stores.clicks.done_with(click_id) if click_id is not None else None
    closed = await services.stores.messages.close(row.id, with_=click_done)
    if click_id is not None:
        services.stores.clicks.marked_done(click_id)
    if closed and record is not None and record.outcome is not None:
        # Counted here, where every settled call's message closes once (a click, an answer in the thread,
        # the HTTP API, an expiry), not in one of the paths that decide.
        metrics.decided(record.outcome, kind=row.kind, waiting_since=row.created_at)
    if row.kind == "approval":  # a Home shows approvals, never questions: one settled changes no Home
        home_changed(services)
    return True


async def _show_approvals_so_far(
    services: SlackServices, client: AsyncWebClient, row: ToolCallMessageRow, record: ToolCallRecord
) -> None:
    """Four eyes: every copy of a waiting approval shows who approved so far, its buttons kept."""
    shown = await services.agent.waiting_call_view(row.run_id, row.tool_call_id)  # once for every copy
    for channel, ts, escalated_to in await services.stores.messages.every_message(row):
        tr = await _words_of_reader(services, row, escalated_to)
        view = await waiting_approval_view(services, row, record, tr, viewer=reader_of(escalated_to), shown=shown)
        text, blocks = approval_text(view, tr), build_approval_blocks(view, tr)
        try:
            await client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
        except SlackApiError as exc:
            if exc.response.get("error") != "message_not_found":
                services.logger.warning("could not show the approvals of %s/%s", row.run_id, row.tool_call_id)
    home_changed(services)


def reader_of(escalated_to: str | None) -> str | None:
    """The one person who reads a copy (a DM to a member of the escalation's group); None: many read it."""
    return escalated_to if escalated_to and is_user_id(escalated_to) else None


async def _words_of_reader(services: SlackServices, row: ToolCallMessageRow, escalated_to: str | None) -> Translator:
    """The words of one message of `row`'s call: a DM copy's in its one reader's language, every other
    (the thread's own, a channel's copy) in the conversation's."""
    if escalated_to and is_user_id(escalated_to):
        return await services.languages.of_person(escalated_to)
    return await services.languages.of_thread(row.thread_id, row.requester)


def _settled_approval(row: ToolCallMessageRow, record: ToolCallRecord | None, tr: Translator) -> tuple[str, list]:
    if record is None:
        view = approval_view_of(row, record)
        note = tr.gettext("This request is no longer waiting.")
        return tr.gettext("No longer waiting: {tool}", tool=row.tool_name), build_closed_approval_blocks(view, note, tr)
    if record.outcome is None:  # the call waits again, in a later message
        view = approval_view_of(row, record)
        note = tr.gettext(
            "The tool started but was interrupted; it waits for a decision again in a newer message below."
        )
        return tr.gettext("Interrupted: {tool}", tool=row.tool_name), build_closed_approval_blocks(view, note, tr)
    # A supervisor's call shows the inner tool's arguments; a direct call its own (edited ones if edited).
    shown = record.args
    view = approval_view_of(row, record, args=shown)
    decision = DecisionView(
        approved=record.outcome == "approved",
        decided_by=record.decided_by,
        decided_at=record.decided_at,
        reason=record.reason,
        edited=shown != row.args,
        expired=record.outcome == "expired",
        cancelled=record.outcome == "cancelled",
        approvals=record.approvals,
        stood_in_for=record.stood_in_for,
    )
    return decided_text(view, decision, tr), build_decided_approval_blocks(view, decision, tr)


async def refresh_open_messages(
    services: SlackServices, client: AsyncWebClient, thread_id: str, *, with_call: tuple[str, str] | None = None
) -> list[tuple[ToolCallMessageRow, list[ShownMessage]]]:
    """Close every open message of the thread whose call was settled meanwhile (e.g. answered in the thread).
    `with_call` (run id, tool call id): that call's messages are read in the same statement, and returned,
    each with every message that shows it (`shown_of_call`)."""
    found = await services.stores.messages.open_in_thread(thread_id, with_call=with_call)
    for row, shown in found:
        if row.closed_at is not None:
            continue
        try:
            await refresh_message(services, client, row, shown=shown)
        except SlackApiError:
            services.logger.warning("could not update the message of %s/%s", row.run_id, row.tool_call_id)
    return [(row, shown) for row, shown in found if with_call == (row.run_id, row.tool_call_id)]


async def refresh_tool_call_messages(
    services: SlackServices, client: AsyncWebClient, run_id: str, tool_call_id: str
) -> None:
    """Update the messages of a call decided outside Slack (the HTTP API) as a click would."""
    for row in await services.stores.messages.of_call(run_id, tool_call_id):
        if row.closed_at is None:
            await refresh_message(services, client, row)
